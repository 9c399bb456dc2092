// The Worker benchmark's floor (loadtest/bench-worker.ts): reads the request body and answers a fixed check
// response, like loadtest/bare-server.ts for the Node server.
const BODY = JSON.stringify({ can: "CHECK_RESULT_ALLOWED", metadata: { check_count: 0 } });

export default {
  async fetch(request) {
    await request.arrayBuffer();
    return new Response(BODY, { headers: { "content-type": "application/json" } });
  },
};
