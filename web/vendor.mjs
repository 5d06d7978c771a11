// Copies the browser builds the run page imports from node_modules into app/static/vendor, so
// the service serves them itself (no CDN, no build step at run time). Run `npm ci && npm run
// vendor` after changing a version in package.json, and commit the result with the lock file.
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "..", "app", "static", "vendor");

// package -> [ES module build inside it, name served under /static/vendor]
const FILES = {
  "d3-hierarchy": ["dist/d3-hierarchy.min.mjs", "d3-hierarchy.js"],
  dompurify: ["dist/purify.es.mjs", "dompurify.js"],
  marked: ["lib/marked.esm.js", "marked.js"],
};

mkdirSync(out, { recursive: true });
const notices = [];
for (const [name, [path, target]] of Object.entries(FILES)) {
  const root = join(here, "node_modules", name);
  const { version, license } = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  // The source maps are not vendored; a dangling reference only makes devtools complain.
  const code = readFileSync(join(root, path), "utf8").replace(/\n\/\/# sourceMappingURL=\S+\s*$/, "\n");
  writeFileSync(join(out, target), `// vendored: ${name}@${version} (${license}) ${path}\n${code}`);
  notices.push(`${name}@${version} (${license})\n\n${readFileSync(join(root, "LICENSE"), "utf8")}`);
  console.log(`${target} <- ${name}@${version}/${path}`);
}
writeFileSync(join(out, "LICENSES.txt"), notices.join("\n\n" + "-".repeat(72) + "\n\n"));
