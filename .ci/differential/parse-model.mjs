// parse-model.mjs: the Node side of the differential test (e2e/differential).
//
// Reads a batch of requests (JSON: {"requests": [{id, provider, stream,
// baseURL, headers}]}) from the file named by argv[2], sends each with the
// official SDK (openai for "chat" and "responses", @anthropic-ai/sdk for
// "anthropic") to its baseURL (the fake provider, or the gate in front of it)
// and prints one JSON line per request: {"id", "parse": {status, error, text,
// finish, calls: [{type, name, args}], names}}. `calls` is what the SDK's own
// result holds (the message, or a stream's final accumulated message);
// `names` is every call name the app could read on the way (stream events
// included). The Go test compares these lines, direct against gated.
import { readFileSync } from 'node:fs';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

const TIMEOUT_MS = 15000;
const CONCURRENCY = 6;

const batch = JSON.parse(readFileSync(process.argv[2], 'utf8'));

function newParse() {
  return { status: 0, error: '', text: '', finish: '', calls: [], names: [] };
}

function str(v) {
  if (v === undefined || v === null) return '';
  return typeof v === 'string' ? v : JSON.stringify(v);
}

// noteNames adds the name of a call-like object and of its direct child
// objects (function.name, custom.name): what an app reads as a call's name.
function noteNames(p, obj) {
  if (!obj || typeof obj !== 'object') return;
  if (typeof obj.name === 'string' && obj.name !== '') p.names.push(obj.name);
  for (const [k, v] of Object.entries(obj)) {
    if (k === 'arguments' || k === 'input') continue;
    if (v && typeof v === 'object' && !Array.isArray(v) && typeof v.name === 'string' && v.name !== '') {
      p.names.push(v.name);
    }
  }
}

function notAnObject(p, v) {
  p.error = `the SDK returned ${typeof v}, not a parsed object`;
}

// --- OpenAI Chat Completions ------------------------------------------------

function chatMessage(p, msg) {
  if (!msg || typeof msg !== 'object') return;
  if (typeof msg.content === 'string') p.text += msg.content;
  for (const tc of Array.isArray(msg.tool_calls) ? msg.tool_calls : []) {
    noteNames(p, tc);
    p.calls.push({
      type: str(tc?.type),
      name: str(tc?.function?.name ?? tc?.custom?.name ?? tc?.name),
      args: str(tc?.function?.arguments ?? tc?.custom?.input ?? tc?.arguments),
    });
  }
  if (msg.function_call && typeof msg.function_call === 'object') {
    noteNames(p, msg.function_call);
    p.calls.push({ type: 'function_call', name: str(msg.function_call.name), args: str(msg.function_call.arguments) });
  }
}

function chatCompletion(p, c) {
  if (!c || typeof c !== 'object') return notAnObject(p, c);
  const finishes = [];
  for (const ch of Array.isArray(c.choices) ? c.choices : []) {
    chatMessage(p, ch?.message);
    finishes.push(str(ch?.finish_reason));
  }
  p.finish = finishes.join(',');
}

async function chat(p, client, stream) {
  const body = { model: 'gpt-4o', messages: [{ role: 'user', content: 'Go on.' }] };
  if (!stream) return chatCompletion(p, await client.chat.completions.create(body));
  const s = client.chat.completions.stream(body);
  for await (const chunk of s) {
    for (const ch of Array.isArray(chunk?.choices) ? chunk.choices : []) {
      for (const tc of Array.isArray(ch?.delta?.tool_calls) ? ch.delta.tool_calls : []) noteNames(p, tc);
      if (ch?.delta?.function_call) noteNames(p, ch.delta.function_call);
    }
  }
  chatCompletion(p, await s.finalChatCompletion());
}

// --- OpenAI Responses ----------------------------------------------------------

function responseObject(p, r) {
  if (!r || typeof r !== 'object') return notAnObject(p, r);
  for (const item of Array.isArray(r.output) ? r.output : []) {
    if (!item || typeof item !== 'object') continue;
    if (item.type === 'message') {
      for (const part of Array.isArray(item.content) ? item.content : []) {
        if (part?.type === 'output_text' && typeof part.text === 'string') p.text += part.text;
      }
      continue;
    }
    noteNames(p, item);
    if (typeof item.name === 'string' || item.arguments !== undefined || item.input !== undefined) {
      p.calls.push({ type: str(item.type), name: str(item.name), args: str(item.arguments ?? item.input) });
    }
  }
  p.finish = str(r.status);
}

async function responses(p, client, stream) {
  const body = { model: 'gpt-5.1', input: 'Go on.' };
  if (!stream) return responseObject(p, await client.responses.create(body));
  const s = client.responses.stream(body);
  for await (const ev of s) {
    if (ev?.item) noteNames(p, ev.item);
  }
  responseObject(p, await s.finalResponse());
}

// --- Anthropic Messages -----------------------------------------------------------

function message(p, m) {
  if (!m || typeof m !== 'object') return notAnObject(p, m);
  for (const block of Array.isArray(m.content) ? m.content : []) {
    if (!block || typeof block !== 'object') continue;
    if (block.type === 'text' && typeof block.text === 'string') {
      p.text += block.text;
      continue;
    }
    noteNames(p, block);
    if (typeof block.name === 'string' || block.input !== undefined) {
      p.calls.push({ type: str(block.type), name: str(block.name), args: str(block.input) });
    }
  }
  p.finish = str(m.stop_reason);
}

async function anthropic(p, client, stream) {
  const body = { model: 'claude-sonnet-4-5', max_tokens: 512, messages: [{ role: 'user', content: 'Go on.' }] };
  if (!stream) return message(p, await client.messages.create(body));
  const s = client.messages.stream(body);
  for await (const ev of s) {
    if (ev?.content_block) noteNames(p, ev.content_block);
  }
  message(p, await s.finalMessage());
}

// --- one request -------------------------------------------------------------------

async function run(req) {
  const p = newParse();
  const common = { baseURL: req.baseURL, apiKey: 'test', maxRetries: 0, timeout: TIMEOUT_MS, defaultHeaders: req.headers };
  try {
    switch (req.provider) {
      case 'chat':
        await chat(p, new OpenAI(common), req.stream);
        break;
      case 'responses':
        await responses(p, new OpenAI(common), req.stream);
        break;
      case 'anthropic':
        await anthropic(p, new Anthropic(common), req.stream);
        break;
      default:
        throw new Error(`unknown provider ${req.provider}`);
    }
  } catch (e) {
    p.status = typeof e?.status === 'number' ? e.status : 0;
    p.error = `${e?.constructor?.name ?? 'Error'}: ${e?.message ?? String(e)}`.slice(0, 300);
  }
  p.names = [...new Set(p.names)].sort();
  return p;
}

const queue = [...batch.requests];
async function worker() {
  for (let req = queue.shift(); req; req = queue.shift()) {
    const parse = await run(req);
    process.stdout.write(JSON.stringify({ id: req.id, parse }) + '\n');
  }
}
await Promise.all(Array.from({ length: CONCURRENCY }, worker));
