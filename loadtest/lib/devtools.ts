/** One DevTools protocol session over `wrangler dev`'s inspector (it admits one client at a time). */
export interface DevToolsSession {
  /** The target's title (the Worker). */
  title: string | undefined;
  /** Sends a method; resolves with its result, rejects with the error the runtime answered. */
  send<T>(method: string, params?: object): Promise<T>;
  close(): void;
}

export async function inspect(port: number): Promise<DevToolsSession> {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json`)).json()) as {
    title?: string;
    webSocketDebuggerUrl: string;
  }[];
  const target = targets[0];
  if (target === undefined) throw new Error(`no inspector target on port ${port}`);
  // wrangler's inspector proxy admits local DevTools only: a localhost Origin
  const ws = new WebSocket(target.webSocketDebuggerUrl, { headers: { Origin: "http://localhost" } } as never);
  await new Promise((done, fail) => {
    ws.onopen = done;
    ws.onerror = fail;
  });
  let next = 1;
  const waiting = new Map<number, { done: (result: unknown) => void; fail: (error: Error) => void }>();
  ws.onmessage = (event) => {
    const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown; error?: unknown };
    if (message.id === undefined) return;
    const call = waiting.get(message.id);
    waiting.delete(message.id);
    if (message.error !== undefined) call?.fail(new Error(JSON.stringify(message.error)));
    else call?.done(message.result);
  };
  return {
    title: target.title,
    send<T>(method: string, params: object = {}): Promise<T> {
      const id = next++;
      ws.send(JSON.stringify({ id, method, params }));
      return new Promise<T>((done, fail) => waiting.set(id, { done: done as (r: unknown) => void, fail }));
    },
    close: () => ws.close(),
  };
}
