#!/usr/bin/env bash
# A private Docker engine for the deployment tests: its own socket, data root and exec root,
# so it never meets another engine on the machine. The data root lives in the project's
# .cache/docker, so images and build caches survive between runs.
#   usage: deploy/offline/engine.sh start|stop|env      (run from the project root)
# `start` prints nothing on success; `env` prints the DOCKER_HOST to use; `stop` stops the
# engine and removes the bridges and iptables rules it made, and is safe to call twice.
set -euo pipefail
root="$(pwd)"
cache="$root/.cache/docker"
# Unix sockets have a ~100-byte path limit: the exec root (sockets, pid files) lives under /run
# with a name derived from the checkout's path, short whatever the checkout's depth.
tag="$(printf '%s' "$root" | sha256sum | cut -c1-10)"
run="/run/plantree-docker-$tag"
sock="$run/docker.sock"
state="$cache/state"          # what the machine looked like before the engine started

engine_up() {
    [ -S "$sock" ] && docker -H "unix://$sock" version >/dev/null 2>&1
}

start() {
    if engine_up; then return 0; fi
    mkdir -p "$cache/data" "$run" "$state"
    ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 | sort >"$state/links"
    sysctl -n net.ipv4.ip_forward >"$state/ip_forward"
    iptables -S FORWARD 2>/dev/null | awk '$1 == "-P" {print $3}' >"$state/forward_policy" || true
    /usr/sbin/dockerd \
        --data-root "$cache/data" \
        --exec-root "$run/exec" \
        --pidfile "$run/dockerd.pid" \
        -H "unix://$sock" \
        --storage-driver overlay2 \
        --log-level warn \
        >"$cache/dockerd.log" 2>&1 &
    for _ in $(seq 1 100); do
        if engine_up; then return 0; fi
        if ! kill -0 $! 2>/dev/null; then break; fi
        sleep 0.2
    done
    echo "dockerd did not start; see $cache/dockerd.log" >&2
    tail -n 20 "$cache/dockerd.log" >&2 || true
    stop
    return 1
}

stop() {
    local pid=""
    [ -f "$run/dockerd.pid" ] && pid="$(cat "$run/dockerd.pid")"
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid"
        # dockerd stops its containers (10 s grace each, in parallel) and its containerd.
        for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
    fi
    # A killed engine can leave its containerd and shims behind: end only those under our root.
    for p in $(pgrep -f -- "$run/exec" || true); do kill -KILL "$p" 2>/dev/null || true; done
    for mnt in $(awk -v r="$cache/data" 'index($2, r) == 1 {print $2}' /proc/mounts | sort -r); do
        umount -l "$mnt" 2>/dev/null || true
    done
    clean_network
    rm -rf "$run"
}

clean_network() {
    # Bridges and veths that were not there before the engine started are the engine's.
    if [ -f "$state/links" ]; then
        ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 | sort \
            | comm -13 "$state/links" - \
            | grep -E '^(docker0|br-[0-9a-f]{12}|veth[0-9a-f]+)$' \
            | while read -r link; do ip link delete "$link" 2>/dev/null || true; done
    fi
    # dockerd's own chains (DOCKER, DOCKER-USER, DOCKER-ISOLATION-*) and every rule naming them.
    for table in filter nat; do
        iptables -t "$table" -S 2>/dev/null | grep -E '^-A .*(DOCKER|docker0|br-[0-9a-f]{12})' \
            | sed 's/^-A /-D /' | while read -r rule; do
                # shellcheck disable=SC2086  # the rule is a list of iptables arguments
                iptables -t "$table" $rule 2>/dev/null || true
            done
        iptables -t "$table" -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^DOCKER/ {print $2}' \
            | while read -r chain; do
                iptables -t "$table" -F "$chain" 2>/dev/null || true
                iptables -t "$table" -X "$chain" 2>/dev/null || true
            done
    done
    # dockerd turns forwarding on and the FORWARD policy to DROP: put both back as they were.
    if [ -s "$state/forward_policy" ]; then
        iptables -P FORWARD "$(cat "$state/forward_policy")" 2>/dev/null || true
    fi
    if [ -f "$state/ip_forward" ]; then
        sysctl -q -w "net.ipv4.ip_forward=$(cat "$state/ip_forward")" || true
    fi
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    env) echo "DOCKER_HOST=unix://$sock" ;;
    *) echo "usage: $0 start|stop|env" >&2; exit 2 ;;
esac
