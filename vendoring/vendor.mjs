// Copies the browser builds the service serves from node_modules into app/static/vendor, so the
// service serves them itself (no CDN, no build step at run time): the run page's libraries and
// the API docs pages' (Swagger UI at /docs, Redoc at /redoc). Run `npm ci && npm run vendor`
// after changing a version in package.json, and commit the result with the lock file.
// .npmrc turns install scripts off: swagger-ui-dist depends on an analytics package whose
// install script reports to a third party; nothing here needs a script to run.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "..", "app", "static", "vendor");

// package -> [[build inside it, name served under /static/vendor], ...]
const FILES = {
  "d3-hierarchy": [["dist/d3-hierarchy.min.mjs", "d3-hierarchy.js"]],
  dompurify: [["dist/purify.es.mjs", "dompurify.js"]],
  marked: [["lib/marked.esm.js", "marked.js"]],
  redoc: [["bundles/redoc.standalone.js", "redoc.standalone.js"]],
  "swagger-ui-dist": [
    ["swagger-ui-bundle.js", "swagger-ui-bundle.js"],
    ["swagger-ui.css", "swagger-ui.css"],
  ],
};

// The license notices a bundle carries for the code inlined into it, beside its own LICENSE.
const BUNDLED_NOTICES = ["LICENSE.txt"];

mkdirSync(out, { recursive: true });
const notices = [];
for (const [name, files] of Object.entries(FILES)) {
  const root = join(here, "node_modules", name);
  const { version, license } = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  let notice = `${name}@${version} (${license})\n\n${readFileSync(join(root, "LICENSE"), "utf8")}`;
  for (const [path, target] of files) {
    const header = `vendored: ${name}@${version} (${license}) ${path}`;
    const comment = target.endsWith(".css") ? `/* ${header} */` : `// ${header}`;
    // The source maps are not vendored; a dangling reference only makes devtools complain.
    const code = readFileSync(join(root, path), "utf8").replace(
      /\n\/[/*][#@] sourceMappingURL=\S+\s*(\*\/)?\s*$/,
      "\n",
    );
    writeFileSync(join(out, target), `${comment}\n${code}`);
    for (const suffix of BUNDLED_NOTICES) {
      const bundled = join(root, `${path}.${suffix}`);
      if (existsSync(bundled)) notice += `\n\nBundled in ${path}:\n\n${readFileSync(bundled, "utf8")}`;
    }
    console.log(`${target} <- ${name}@${version}/${path}`);
  }
  notices.push(notice);
}
writeFileSync(join(out, "LICENSES.txt"), notices.join("\n\n" + "-".repeat(72) + "\n\n"));
