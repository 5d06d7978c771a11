# Stand-in for the nginx image: Debian's nginx in the foreground, logging to the container's
# output, reading its site from /etc/nginx/conf.d like the official image (whose sample site is
# not there either), with curl for health checks as the official image has.
FROM plantree-offline/debian:bookworm
# policy-rc.d keeps the package's scripts from starting a server during the build.
RUN printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d \
    && apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nginx curl \
    && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /usr/sbin/policy-rc.d \
    && rm -f /etc/nginx/sites-enabled/default \
    && ln -sf /dev/stdout /var/log/nginx/access.log \
    && ln -sf /dev/stderr /var/log/nginx/error.log
EXPOSE 80
STOPSIGNAL SIGQUIT
CMD ["nginx", "-g", "daemon off;"]
