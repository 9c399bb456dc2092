/**
 * A gRPC status message as the gRPC spec percent-encodes it in `grpc-message`: only bytes outside printable ASCII,
 * and `%`. connect encodes with encodeURIComponent (`:` as `%3A`), which grpc-js (so permify-node) decodes with
 * decodeURI, leaving `%3A` in the message; grpc-go servers such as Permify's send `:` as it is.
 */
export function encodeGrpcMessage(text: string): string {
  let out = "";
  for (const byte of new TextEncoder().encode(text)) {
    out +=
      byte >= 0x20 && byte <= 0x7e && byte !== 0x25
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/** An encodeURIComponent-encoded message (connect's), encoded as the spec says. */
export function grpcMessageEncoding(encoded: string): string {
  try {
    return encodeGrpcMessage(decodeURIComponent(encoded));
  } catch {
    return encoded;
  }
}
