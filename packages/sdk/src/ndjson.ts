/** Newline-delimited JSON bodies (watch, lookup-entity-stream) as async iterators. */
import { PembaApiError } from "./errors.ts";

/**
 * Yields one parsed object per line. A `{"error": {...}}` line (grpc-gateway's stream error) throws a
 * PembaApiError. Leaving the loop early (`break`, `return`) cancels the body, which closes the connection.
 */
export async function* readNdjson<T>(res: Response, url: string): AsyncGenerator<T, void, undefined> {
  const body = res.body;
  if (body === null) return;
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffered = "";
  let finished = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      buffered += done ? decoder.decode() : decoder.decode(value, { stream: true });
      let newline = buffered.indexOf("\n");
      while (newline >= 0) {
        const line = buffered.slice(0, newline).trim();
        buffered = buffered.slice(newline + 1);
        if (line !== "") yield parseLine<T>(line, url, res.status);
        newline = buffered.indexOf("\n");
      }
      if (done) break;
    }
    if (buffered.trim() !== "") yield parseLine<T>(buffered.trim(), url, res.status);
    finished = true;
  } finally {
    if (!finished) await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}

function parseLine<T>(line: string, url: string, status: number): T {
  const parsed = JSON.parse(line) as { error?: { code?: number; message?: string; details?: unknown[] } };
  if (parsed.error !== undefined) throw new PembaApiError(url, status >= 400 ? status : 500, parsed.error);
  return parsed as T;
}
