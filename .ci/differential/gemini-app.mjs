// gemini-app.mjs: an app on the official Node Gemini clients, for the
// end-to-end tests (e2e/geminiapps_test.go): it sends one request through
// the gate as an app would and prints what the client parsed.
//
// The scenario is JSON, in argv[2] (or in $GEMINI_APP_SCENARIO):
//   client    "@google/genai" (ai.models.generateContent /
//             generateContentStream) or "@ai-sdk/google" (the `ai` package's
//             generateText / streamText over createGoogleGenerativeAI)
//   stream    true: the streamed call (alt=sse)
//   baseURL   the gate's model route (no path)
//   headers   sent with every request (the owner's header)
//   tools     [{name, description, parameters}]: declared without execute
//   history   [{role: "user"|"model", text}]: the conversation so far
//
// It prints one JSON line per response the app read of a stream,
// {"chunk": n, "text": "<all text so far>"} (so that a test can act while
// the stream is open, as a person answering a held call), then one last
// line {"seen": {error, status, chunks, text, calls: [{name, args}],
// finish}}: calls with args as canonical JSON.
import { GoogleGenAI } from '@google/genai';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { generateText, jsonSchema, streamText, tool } from 'ai';

const TIMEOUT_MS = 60000;
const MODEL = 'gemini-2.5-flash';

function canonical(v) {
  if (Array.isArray(v)) return '[' + v.map(canonical).join(',') + ']';
  if (v && typeof v === 'object') {
    return '{' + Object.keys(v).sort().map((k) => JSON.stringify(k) + ':' + canonical(v[k])).join(',') + '}';
  }
  return JSON.stringify(v ?? null);
}

function print(line) {
  process.stdout.write(JSON.stringify(line) + '\n');
}

function fail(s, e) {
  const status = e?.status ?? e?.statusCode ?? e?.cause?.statusCode;
  s.status = typeof status === 'number' ? status : 0;
  s.error = `${e?.constructor?.name ?? 'Error'}: ${e?.message ?? String(e)}`.slice(0, 500) || 'error';
}

function progress(s) {
  print({ chunk: s.chunks, text: s.text });
}

// --- @google/genai ------------------------------------------------------------

function genaiResponse(s, r) {
  s.chunks++;
  const cand = Array.isArray(r?.candidates) ? r.candidates[0] : undefined;
  if (!cand) return;
  if (cand.finishReason) s.finish = String(cand.finishReason);
  for (const part of Array.isArray(cand.content?.parts) ? cand.content.parts : []) {
    if (part?.functionCall) {
      s.calls.push({ name: part.functionCall.name ?? '', args: canonical(part.functionCall.args ?? {}) });
    } else if (typeof part?.text === 'string' && part.thought !== true) {
      s.text += part.text;
    }
  }
}

async function genai(s, sc) {
  const ai = new GoogleGenAI({ apiKey: 'test', httpOptions: { baseUrl: sc.baseURL, headers: sc.headers, timeout: TIMEOUT_MS } });
  const params = {
    model: MODEL,
    contents: sc.history.map((h) => ({ role: h.role, parts: [{ text: h.text }] })),
    config: {
      tools: [{ functionDeclarations: (sc.tools ?? []).map((t) => ({ name: t.name, description: t.description, parametersJsonSchema: t.parameters })) }],
    },
  };
  if (!sc.stream) {
    genaiResponse(s, await ai.models.generateContent(params));
    return;
  }
  for await (const chunk of await ai.models.generateContentStream(params)) {
    genaiResponse(s, chunk);
    progress(s);
  }
}

// --- @ai-sdk/google through `ai` ----------------------------------------------

function aiCall(s, part) {
  let args;
  try {
    args = canonical(typeof part.input === 'string' ? JSON.parse(part.input) : part.input ?? {});
  } catch {
    args = String(part.input);
  }
  s.calls.push({ name: part.toolName, args });
}

async function aiSDK(s, sc) {
  const google = createGoogleGenerativeAI({ baseURL: sc.baseURL + '/v1beta', apiKey: 'test', headers: sc.headers });
  const tools = Object.fromEntries((sc.tools ?? []).map((t) => [t.name, tool({ description: t.description, inputSchema: jsonSchema(t.parameters) })]));
  const messages = sc.history.map((h) => ({ role: h.role === 'model' ? 'assistant' : 'user', content: h.text }));
  const common = { model: google(MODEL), messages, tools, maxRetries: 0, abortSignal: AbortSignal.timeout(TIMEOUT_MS) };
  if (!sc.stream) {
    const r = await generateText(common);
    s.chunks = 1;
    for (const part of r.content ?? []) {
      if (part.type === 'text') s.text += part.text;
      else if (part.type === 'tool-call') aiCall(s, part);
    }
    s.finish = String(r.rawFinishReason ?? '');
    return;
  }
  const r = streamText({ ...common, includeRawChunks: true, onError: () => {} });
  for await (const part of r.fullStream) {
    switch (part.type) {
      case 'raw':
        s.chunks++;
        break;
      case 'text-delta':
        s.text += part.text ?? part.delta ?? '';
        progress(s);
        break;
      case 'tool-call':
        aiCall(s, part);
        break;
      case 'error':
        if (!s.error) fail(s, part.error);
        break;
      case 'finish-step':
        s.finish = String(part.rawFinishReason ?? '');
        break;
    }
  }
}

const sc = JSON.parse(process.argv[2] ?? process.env.GEMINI_APP_SCENARIO);
const s = { error: '', status: 0, chunks: 0, text: '', calls: [], finish: '' };
try {
  switch (sc.client) {
    case '@google/genai':
      await genai(s, sc);
      break;
    case '@ai-sdk/google':
      await aiSDK(s, sc);
      break;
    default:
      throw new Error(`unknown client ${sc.client}`);
  }
} catch (e) {
  fail(s, e);
}
print({ seen: s });
