/**
 * An OTLP/HTTP receiver for tests: a real node:http server taking the JSON bodies the OpenTelemetry exporters POST
 * to /v1/traces and /v1/logs, kept as spans and log records.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  status: { code?: number; message?: string };
  attributes: Record<string, unknown>;
  /** The resource's attributes of the batch the span came in. */
  resource: Record<string, unknown>;
}

export interface ReceivedLog {
  body: unknown;
  attributes: Record<string, unknown>;
}

interface AnyValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  kvlistValue?: { values: { key: string; value: AnyValue }[] };
  arrayValue?: { values: AnyValue[] };
}

/** An OTLP JSON AnyValue as a plain value (ints as numbers). */
export function plain(v: AnyValue | undefined): unknown {
  if (v === undefined) return undefined;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.kvlistValue !== undefined) return attributes(v.kvlistValue.values);
  if (v.arrayValue !== undefined) return (v.arrayValue.values ?? []).map(plain);
  return undefined;
}

function attributes(list: { key: string; value: AnyValue }[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const { key, value } of list ?? []) out[key] = plain(value);
  return out;
}

export interface OtlpReceiver {
  url: string;
  spans: ReceivedSpan[];
  logs: ReceivedLog[];
  /** Content types of the requests received. */
  contentTypes: string[];
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const logs: ReceivedLog[] = [];
  const contentTypes: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      contentTypes.push(String(req.headers["content-type"]));
      const body = JSON.parse(Buffer.concat(chunks).toString() || "{}");
      if (req.url === "/v1/traces") {
        for (const rs of body.resourceSpans ?? []) {
          const resource = attributes(rs.resource?.attributes);
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) {
              spans.push({
                traceId: s.traceId,
                spanId: s.spanId,
                parentSpanId: s.parentSpanId ?? "",
                name: s.name,
                kind: s.kind,
                status: s.status ?? {},
                attributes: attributes(s.attributes),
                resource,
              });
            }
          }
        }
      } else if (req.url === "/v1/logs") {
        for (const rl of body.resourceLogs ?? []) {
          for (const sl of rl.scopeLogs ?? []) {
            for (const r of sl.logRecords ?? [])
              logs.push({ body: plain(r.body), attributes: attributes(r.attributes) });
          }
        }
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    logs,
    contentTypes,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
