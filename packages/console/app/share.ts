/**
 * The playground's state in the URL (`#p=<deflate-raw, base64url of JSON>`): the schema text and the data as
 * Permify's strings (`doc:1#owner@user:alice`, `doc:1$public|boolean:true`), so a link reopens the same model.
 */
export interface PlaygroundState {
  schema: string;
  tuples: string[];
  attributes: string[];
}

async function pipe(bytes: Uint8Array, stream: CompressionStream | DecompressionStream): Promise<Uint8Array> {
  const out = new Blob([bytes as BlobPart]).stream().pipeThrough(stream);
  return new Uint8Array(await new Response(out).arrayBuffer());
}

const toBase64Url = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes))
    .replaceAll("+", "-")
    .replaceAll("/", "_")
    .replace(/=+$/, "");

const fromBase64Url = (text: string) =>
  Uint8Array.from(atob(text.replaceAll("-", "+").replaceAll("_", "/")), (c) => c.charCodeAt(0));

export async function encodeState(state: PlaygroundState): Promise<string> {
  const json = new TextEncoder().encode(JSON.stringify(state));
  const packed = await pipe(json, new CompressionStream("deflate-raw"));
  let text = "";
  // whole 3-byte groups per chunk, so only the last one may end in padding
  for (let i = 0; i < packed.length; i += 12288) text += toBase64Url(packed.subarray(i, i + 12288));
  return text;
}

/** The state a `#p=` fragment holds, or undefined when there is none or it does not decode. */
export async function decodeState(hash: string): Promise<PlaygroundState | undefined> {
  const m = /^#p=([A-Za-z0-9_-]+)$/.exec(hash);
  if (!m) return undefined;
  try {
    const json = await pipe(fromBase64Url(m[1]!), new DecompressionStream("deflate-raw"));
    const state = JSON.parse(new TextDecoder().decode(json)) as PlaygroundState;
    if (
      typeof state.schema !== "string" ||
      !Array.isArray(state.tuples) ||
      !Array.isArray(state.attributes)
    ) {
      return undefined;
    }
    return state;
  } catch {
    return undefined;
  }
}
