/**
 * `/docs`: a small self-contained API reference page (no CDN assets). The server writes every endpoint into it
 * (method, path and summary, grouped by tag, and a link to `openapi.json`), so it is useful without JavaScript;
 * with JavaScript, the page fetches `openapi.json` and adds each endpoint's request and response schemas.
 */
import type { OpenAPIHono } from "@hono/zod-openapi";

type OpenApiDocument = ReturnType<OpenAPIHono["getOpenAPIDocument"]>;

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"] as const;

const esc = (text: string) =>
  text.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]!);

/** The endpoints of `doc` as HTML: an `<h2>` per tag (in order of first use), a list item per operation. */
function endpointList(doc: OpenApiDocument): string {
  const byTag = new Map<string, string[]>();
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method];
      if (op === undefined) continue;
      const tag = op.tags?.[0] ?? "Other";
      const items = byTag.get(tag) ?? [];
      byTag.set(tag, items);
      items.push(
        `<li><span class="m ${method}">${method.toUpperCase()}</span><code>${esc(path)}</code>` +
          `${op.summary ? ` — ${esc(op.summary)}` : ""}</li>`,
      );
    }
  }
  return [...byTag]
    .map(([tag, items]) => `<h2>${esc(tag)}</h2>\n<ul>\n${items.join("\n")}\n</ul>`)
    .join("\n");
}

/** The page for `doc` (the document `/openapi.json` serves). */
export function docsPage(doc: OpenApiDocument): string {
  const info = `${doc.info.title} ${doc.info.version} (OpenAPI ${doc.openapi})`;
  return DOCS_PAGE.replace("<!--info-->", () => esc(info)).replace("<!--endpoints-->", () =>
    endpointList(doc),
  );
}

const DOCS_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Pemba API reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#1d232a;background:#fafafa}
header{background:#1d3557;color:#fff;padding:16px 24px}header h1{margin:0;font-size:22px}
main{max-width:980px;margin:0 auto;padding:16px 24px}
h2{border-bottom:1px solid #ddd;padding-bottom:4px;margin-top:32px}
details{background:#fff;border:1px solid #ddd;border-radius:6px;margin:8px 0}
summary{cursor:pointer;padding:8px 12px;font-family:ui-monospace,monospace}
.m{display:inline-block;min-width:64px;font-weight:700;color:#fff;border-radius:4px;padding:0 6px;margin-right:8px;text-align:center}
.post{background:#2a9d8f}.patch{background:#e9c46a;color:#1d232a}.delete{background:#e76f51}.get{background:#457b9d}
.body{padding:0 16px 12px}pre{background:#f1f3f5;padding:8px;border-radius:4px;overflow:auto;font-size:13px}
header a{color:#fff}ul{list-style:none;padding:0}li{margin:6px 0}li code{margin-right:6px}
</style></head>
<body><header><h1>Pemba API reference</h1><div><!--info--> · <a href="openapi.json">openapi.json</a></div></header>
<main id="root"><!--endpoints--></main>
<script>
(async function () {
  var doc = await (await fetch("openapi.json")).json();
  var schemas = (doc.components && doc.components.schemas) || {};
  function resolve(s, depth) {
    if (!s || depth > 6) return s;
    if (s.$ref) { var name = s.$ref.split("/").pop(); return resolve(schemas[name], depth + 1); }
    var out = Array.isArray(s) ? [] : {};
    for (var k in s) out[k] = typeof s[k] === "object" ? resolve(s[k], depth + 1) : s[k];
    return out;
  }
  function esc(t) { return String(t).replace(/[&<>]/g, function (c) { return {"&":"&amp;","<":"&lt;",">":"&gt;"}[c]; }); }
  var byTag = {};
  Object.keys(doc.paths).forEach(function (path) {
    Object.keys(doc.paths[path]).forEach(function (method) {
      var op = doc.paths[path][method];
      var tag = (op.tags && op.tags[0]) || "Other";
      (byTag[tag] = byTag[tag] || []).push({ path: path, method: method, op: op });
    });
  });
  var html = "";
  Object.keys(byTag).forEach(function (tag) {
    html += "<h2>" + esc(tag) + "</h2>";
    byTag[tag].forEach(function (e) {
      var req = e.op.requestBody && e.op.requestBody.content["application/json"];
      var ok = e.op.responses["200"] && e.op.responses["200"].content;
      var res = ok && ok[Object.keys(ok)[0]];
      html += '<details><summary><span class="m ' + e.method + '">' + e.method.toUpperCase() + "</span>" + esc(e.path) +
        " — " + esc(e.op.summary || "") + '</summary><div class="body">' +
        (e.op.description ? "<p>" + esc(e.op.description) + "</p>" : "") +
        "<p>operationId: <code>" + esc(e.op.operationId) + "</code></p>" +
        (req ? "<h4>Request body</h4><pre>" + esc(JSON.stringify(resolve(req.schema, 0), null, 2)) + "</pre>" : "") +
        (res ? "<h4>Response</h4><pre>" + esc(JSON.stringify(resolve(res.schema, 0), null, 2)) + "</pre>" : "") +
        "<h4>Errors</h4><pre>{\\"code\\": &lt;gRPC code&gt;, \\"message\\": \\"ERROR_CODE_...\\", \\"details\\": []}</pre></div></details>";
    });
  });
  document.getElementById("root").innerHTML = html;
})();
</script></body></html>`;
