// Starts Swagger UI on /docs with the service's own OpenAPI document. A file of its own, not an
// inline script, so the page's Content-Security-Policy can forbid inline scripts.
window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  presets: [SwaggerUIBundle.presets.apis],
  layout: "BaseLayout",
  deepLinking: true,
  // The default validator is a third-party service that would receive the whole schema.
  validatorUrl: null,
  // A key typed into "Authorize" lives only as long as the tab: never written to storage.
  persistAuthorization: false,
});
