// Starts Redoc on /redoc with the service's own OpenAPI document. A file of its own, not an
// inline script, so the page's Content-Security-Policy can forbid inline scripts. Redoc adds
// its styles as <style> elements at run time: they carry the nonce this response's policy
// allows (set by the server in the page's meta element).
const nonce = document.querySelector('meta[name="csp-style-nonce"]').content;
Redoc.init(
  "/openapi.json",
  {
    nonce,
    // Search runs in a worker Redoc builds from a blob: URL, which the policy refuses (only
    // the service's own script files run). The API is small enough to read without it.
    disableSearch: true,
  },
  document.getElementById("redoc"),
);
