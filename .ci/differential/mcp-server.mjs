// mcp-server.mjs: the TypeScript MCP server of the differential test
// (e2e/differential), built the way the SDK's README builds one: Express with
// express.json() (which inflates gzip and deflate bodies and decodes UTF-16
// and other utf-* charsets) in front of a stateless Streamable HTTP transport.
//
// Tools: delete_post (the gate holds it) and echo (not gated). Every call a
// tool handler runs is recorded with the request's X-Differential-Key, and so
// is every POST that carries a call (its parsed body names tools/call or a
// tool) or that express.json could not read. GET /calls returns both.
// Prints {"port": N} on its first stdout line once it listens on 127.0.0.1.
import express from 'express';
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

const calls = []; // {key, tool, args}
const requests = []; // {key, what}: the POSTs that carry a call or could not be read

function newServer(key) {
  const server = new McpServer({ name: 'blog', version: '1' });
  server.registerTool(
    'delete_post',
    { description: 'Delete a post.', inputSchema: { post: z.number() } },
    async (args) => {
      calls.push({ key, tool: 'delete_post', args });
      return { content: [{ type: 'text', text: `deleted ${args.post}` }] };
    },
  );
  server.registerTool(
    'echo',
    { description: 'Echo.', inputSchema: { text: z.string() } },
    async (args) => {
      calls.push({ key, tool: 'echo', args });
      return { content: [{ type: 'text', text: args.text }] };
    },
  );
  return server;
}

const app = express();
app.use(express.json());
app.use((req, res, next) => {
  const text = JSON.stringify(req.body ?? null);
  if (req.method === 'POST' && /tools\/call|delete_post|echo/.test(text)) {
    requests.push({ key: req.get('x-differential-key') ?? '', what: text.slice(0, 200) });
  }
  next();
});
app.post('/mcp', async (req, res) => {
  const server = newServer(req.get('x-differential-key') ?? '');
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  res.on('close', () => {
    transport.close();
    server.close();
  });
  try {
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  } catch (e) {
    if (!res.headersSent) res.status(500).json({ jsonrpc: '2.0', id: null, error: { code: -32603, message: String(e) } });
  }
});
app.get('/calls', (req, res) => res.json({ calls, requests }));
// express.json's refusals (an encoding or charset it does not take, a body
// it cannot parse): recorded, then answered as Express does.
app.use((err, req, res, next) => {
  requests.push({ key: req.get('x-differential-key') ?? '', what: `unreadable: ${err.type ?? err.message}` });
  next(err);
});

const listener = app.listen(0, '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ port: listener.address().port }) + '\n');
});
