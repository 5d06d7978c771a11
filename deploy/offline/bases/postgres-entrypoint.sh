#!/bin/sh
# Initialises an empty data directory from POSTGRES_* the way the official image does, then
# runs the server in the foreground as the postgres user.
set -eu
if [ "$(id -u)" = 0 ]; then
    mkdir -p "$PGDATA" && chown -R postgres:postgres "$PGDATA" && chmod 700 "$PGDATA"
    exec gosu postgres "$0" "$@"
fi
user="${POSTGRES_USER:-postgres}"
db="${POSTGRES_DB:-$user}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    pwfile="$(mktemp)"
    printf '%s\n' "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}" >"$pwfile"
    initdb -D "$PGDATA" -U "$user" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 >/dev/null
    rm -f "$pwfile"
    printf "listen_addresses = '*'\n" >>"$PGDATA/postgresql.conf"
    printf 'host all all all scram-sha-256\n' >>"$PGDATA/pg_hba.conf"
    if [ "$db" != postgres ]; then
        pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
        psql -q -U "$user" -d postgres -c "CREATE DATABASE \"$db\""
        pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
    fi
fi
exec "$@" -D "$PGDATA"
