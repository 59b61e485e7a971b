// Writes src/schema.ts, the types of the service's OpenAPI schema, with openapi-typescript.
//
//   node scripts/generate.mjs                      # asks ../../manage.py for the schema
//   node scripts/generate.mjs SCHEMA.json [OUT.ts]  # from a schema file (JSON or YAML)
//
// The service's tests run the second form on the schema it generates now and fail when the
// committed src/schema.ts differs, so the types cannot drift from the API.
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import openapiTS, { astToString } from "openapi-typescript";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "..", "..", "..");

const HEADER = `/**
 * The service's /v1 API as types, generated from its OpenAPI schema by openapi-typescript.
 * Do not edit: regenerate with \`npm run generate\` in clients/typescript (see its README).
 * The client names paths, never operation ids, so renamed operations change nothing there.
 */

`;

function schemaFromService() {
  // Django needs a SECRET_KEY to start; the schema does not depend on it.
  const env = { ...process.env, SECRET_KEY: process.env.SECRET_KEY || "schema-only" };
  return execFileSync(
    resolve(root, ".venv", "bin", "python"),
    [resolve(root, "manage.py"), "spectacular", "--format", "openapi-json"],
    { cwd: root, env, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 },
  );
}

const [schemaPath, outPath = resolve(here, "..", "src", "schema.ts")] = process.argv.slice(2);
const text = schemaPath ? readFileSync(schemaPath, "utf8") : schemaFromService();
// A field with a default may be left out of a request, so it stays optional.
const ast = await openapiTS(text, { defaultNonNullable: false });
writeFileSync(outPath, HEADER + astToString(ast));
console.error(`wrote ${outPath}`);
