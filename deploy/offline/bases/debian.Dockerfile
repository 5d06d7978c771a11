# The common root of the stand-in images: a debootstrap'd Debian bookworm (imported as
# plantree-offline/rootfs) that trusts this machine's certificate authorities, so apt, pip and
# uv inside later RUN steps reach the package registries. Only stand-ins carry them.
FROM plantree-offline/rootfs:bookworm
ENV LANG=C.UTF-8 \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
    PIP_CERT=/etc/ssl/certs/ca-certificates.crt \
    REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt
COPY host-ca/ /usr/local/share/ca-certificates/
# apt fetches over http (verified by its keyring); ca-certificates then takes in the host's CA.
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ca-certificates \
    && update-ca-certificates \
    && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin
