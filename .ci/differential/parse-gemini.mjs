// parse-gemini.mjs: the Node side of the Gemini client differential test
// (e2e/differential/gemini*_test.go).
//
// Reads a batch of requests (JSON: {"requests": [{id, client, stream,
// baseURL, headers, tools, progressURL}]}) from the file named by argv[2]
// (or, with argv[2] "-", one request a line from stdin, answered in turn),
// sends each with the official client as an app would (client
// "@google/genai": ai.models.generateContent / generateContentStream;
// "@ai-sdk/google": the `ai` package's generateText / streamText over
// createGoogleGenerativeAI) to baseURL (a local server that answers with
// the bytes under test) and prints one JSON line per request:
// {"id", "seen": {...}}, the canonical form of what the app saw, the same
// shape the Go side (google.golang.org/genai) prints:
//   status   the HTTP status of an API error the client reported (0: none)
//   error    the client's error ("" when none)
//   chunks   how many responses the app received (a unary answer: 1)
//   text     the text parts that are not thoughts, joined
//   thought  the thought text parts, joined
//   calls    [{name, args, id, signature}]: args as canonical JSON (keys
//            sorted), id "" when the client made one up, signature the
//            part's thoughtSignature
//   signatures  the thoughtSignatures on parts that are not calls, in order
//   finish   the last finishReason the app read (raw, as Gemini wrote it)
//   usage    the last usageMetadata: {prompt, candidates, thoughts, total}
// progressURL, when set, is fetched after each response the app received
// (with &n=<count>): the server holds the rest of a stream back until the
// client has shown it read the responses before the hold.
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { GoogleGenAI } from '@google/genai';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { generateText, jsonSchema, streamText, tool } from 'ai';

const TIMEOUT_MS = 15000;
const CONCURRENCY = 6;
const MODEL = 'gemini-2.5-flash';
// What @ai-sdk/google's generateId returns here: it makes up an id for a
// call that has none, and the canonical form says "" for it, as the other
// clients do.
const MADE_UP = 'toolgate-made-up-id-';


function newSeen() {
  return { status: 0, error: '', chunks: 0, text: '', thought: '', calls: [], signatures: [], finish: '', usage: null };
}

// canonical writes JSON with object keys sorted, so that args compare as
// values whatever order the client kept them in.
function canonical(v) {
  if (Array.isArray(v)) return '[' + v.map(canonical).join(',') + ']';
  if (v && typeof v === 'object') {
    return '{' + Object.keys(v).sort().map((k) => JSON.stringify(k) + ':' + canonical(v[k])).join(',') + '}';
  }
  return JSON.stringify(v ?? null);
}

function usageOf(u) {
  if (!u || typeof u !== 'object') return null;
  return {
    prompt: u.promptTokenCount ?? 0,
    candidates: u.candidatesTokenCount ?? 0,
    thoughts: u.thoughtsTokenCount ?? 0,
    total: u.totalTokenCount ?? 0,
  };
}

function fail(s, e) {
  const status = e?.status ?? e?.statusCode ?? e?.cause?.statusCode;
  s.status = typeof status === 'number' ? status : 0;
  s.error = `${e?.constructor?.name ?? 'Error'}: ${e?.message ?? String(e)}`.slice(0, 300) || 'error';
}

async function progress(req, n) {
  if (!req.progressURL) return;
  try {
    await fetch(`${req.progressURL}&n=${n}`);
  } catch {
    // the server reports a client that never showed progress
  }
}

// --- @google/genai -------------------------------------------------------------

// genaiResponse adds one GenerateContentResponse as the app reads it:
// candidates[0]'s parts, finish reason and the response's usage.
function genaiResponse(s, r) {
  s.chunks++;
  const u = usageOf(r?.usageMetadata);
  if (u) s.usage = u;
  const cand = Array.isArray(r?.candidates) ? r.candidates[0] : undefined;
  if (!cand) return;
  if (cand.finishReason) s.finish = String(cand.finishReason);
  for (const part of Array.isArray(cand.content?.parts) ? cand.content.parts : []) {
    if (!part || typeof part !== 'object') continue;
    const fc = part.functionCall;
    if (fc && typeof fc === 'object') {
      if (typeof fc.name === 'string' && fc.name !== '') {
        s.calls.push({ name: fc.name, args: canonical(fc.args ?? {}), id: fc.id ?? '', signature: part.thoughtSignature ?? '' });
      }
      continue;
    }
    if (typeof part.text === 'string') {
      if (part.thought === true) s.thought += part.text;
      else s.text += part.text;
    }
    if (part.thoughtSignature) s.signatures.push(part.thoughtSignature);
  }
}

async function genai(s, req) {
  const ai = new GoogleGenAI({
    apiKey: 'test',
    httpOptions: { baseUrl: req.baseURL, headers: req.headers, timeout: TIMEOUT_MS },
  });
  const params = {
    model: MODEL,
    contents: 'Go on.',
    config: { tools: [{ functionDeclarations: (req.tools ?? []).map((name) => ({ name, parameters: { type: 'OBJECT' } })) }] },
  };
  if (!req.stream) {
    genaiResponse(s, await ai.models.generateContent(params));
    return;
  }
  for await (const chunk of await ai.models.generateContentStream(params)) {
    genaiResponse(s, chunk);
    await progress(req, s.chunks);
  }
}

// --- @ai-sdk/google through `ai` ------------------------------------------------

function aiSignature(meta) {
  const sig = meta?.google?.thoughtSignature;
  return typeof sig === 'string' ? sig : '';
}

function aiCall(s, part) {
  let args = part.input;
  try {
    args = canonical(typeof part.input === 'string' ? JSON.parse(part.input) : part.input ?? {});
  } catch {
    args = String(part.input);
  }
  const id = String(part.toolCallId ?? '');
  s.calls.push({ name: part.toolName, args, id: id.startsWith(MADE_UP) ? '' : id, signature: aiSignature(part.providerMetadata) });
}

async function aiSDK(s, req) {
  let n = 0;
  const google = createGoogleGenerativeAI({
    baseURL: req.baseURL + '/v1beta',
    apiKey: 'test',
    headers: req.headers,
    generateId: () => MADE_UP + n++,
  });
  const tools = Object.fromEntries((req.tools ?? []).map((name) => [name, tool({ inputSchema: jsonSchema({ type: 'object' }) })]));
  const common = { model: google(MODEL), prompt: 'Go on.', tools, maxRetries: 0, abortSignal: AbortSignal.timeout(TIMEOUT_MS) };
  if (!req.stream) {
    const r = await generateText(common);
    s.chunks = 1;
    for (const part of r.content ?? []) {
      if (part.type === 'text') {
        s.text += part.text;
        const sig = aiSignature(part.providerMetadata);
        if (sig) s.signatures.push(sig);
      } else if (part.type === 'reasoning') {
        s.thought += part.text;
        const sig = aiSignature(part.providerMetadata);
        if (sig) s.signatures.push(sig);
      } else if (part.type === 'tool-call') {
        aiCall(s, part);
      }
    }
    s.finish = String(r.rawFinishReason ?? '');
    s.usage = usageOf(r.usage?.raw ?? r.response?.body?.usageMetadata);
    return;
  }
  const r = streamText({ ...common, includeRawChunks: true, onError: () => {} });
  for await (const part of r.fullStream) {
    switch (part.type) {
      case 'raw':
        s.chunks++;
        await progress(req, s.chunks);
        break;
      case 'text-delta': {
        s.text += part.text ?? part.delta ?? '';
        const sig = aiSignature(part.providerMetadata);
        if (sig) s.signatures.push(sig);
        break;
      }
      case 'reasoning-delta': {
        s.thought += part.text ?? part.delta ?? '';
        const sig = aiSignature(part.providerMetadata);
        if (sig) s.signatures.push(sig);
        break;
      }
      case 'tool-call':
        aiCall(s, part);
        break;
      case 'error':
        if (!s.error) fail(s, part.error);
        break;
      case 'finish-step':
        s.finish = String(part.rawFinishReason ?? '');
        s.usage = usageOf(part.usage?.raw) ?? s.usage;
        break;
    }
  }
}

// --- one request ----------------------------------------------------------------

async function run(req) {
  const s = newSeen();
  try {
    switch (req.client) {
      case '@google/genai':
        await genai(s, req);
        break;
      case '@ai-sdk/google':
        await aiSDK(s, req);
        break;
      default:
        throw new Error(`unknown client ${req.client}`);
    }
  } catch (e) {
    fail(s, e);
  }
  return s;
}

function answer(req, seen) {
  process.stdout.write(JSON.stringify({ id: req.id, seen }) + '\n');
}

if (process.argv[2] === '-') {
  // Kept running (the fuzz target): one request a line on stdin, its
  // answer a line on stdout, until stdin closes.
  for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
    if (line.trim() === '') continue;
    const req = JSON.parse(line);
    answer(req, await run(req));
  }
} else {
  const queue = [...JSON.parse(readFileSync(process.argv[2], 'utf8')).requests];
  const worker = async () => {
    for (let req = queue.shift(); req; req = queue.shift()) answer(req, await run(req));
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}
