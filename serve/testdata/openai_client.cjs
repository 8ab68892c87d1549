// Drives a switchyard serve server with the official OpenAI client (npm
// "openai"), as TestOpenAINodeClient runs it. Configuration comes in the
// environment: SWITCHYARD_OPENAI_NODE_DIR (where the package is installed)
// and SERVE_TEST, a JSON object {baseURL, model, chatModel, prompt, maxTokens,
// want}. Every check throws on failure; the last line printed is "ok".
'use strict';
const assert = require('node:assert/strict');
const path = require('node:path');

const OpenAI = require(path.join(process.env.SWITCHYARD_OPENAI_NODE_DIR, 'node_modules', 'openai'));
const cfg = JSON.parse(process.env.SERVE_TEST);

async function refused(promise, status, code, param) {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof OpenAI.APIError, `not an APIError: ${e}`);
    assert.equal(e.status, status, e.message);
    assert.equal(e.code, code, e.message);
    if (param !== undefined) assert.equal(e.param, param, e.message);
    return e;
  }
  assert.fail(`accepted; want ${status} ${code}`);
}

async function collect(stream) {
  let text = '', finish = null, usage = null, chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    for (const c of chunk.choices) {
      text += c.text ?? c.delta?.content ?? '';
      if (c.finish_reason) finish = c.finish_reason;
    }
    if (chunk.usage) usage = chunk.usage;
  }
  return { text, finish, usage, chunks };
}

async function main() {
  const client = new OpenAI({ baseURL: cfg.baseURL + '/v1', apiKey: 'unused', maxRetries: 0, timeout: 60_000 });
  const { model, prompt, maxTokens, want } = cfg;

  const models = await client.models.list();
  const ids = models.data.map((m) => m.id);
  assert.ok(ids.includes(model) && ids.includes(cfg.chatModel), `models ${ids}`);
  const one = await client.models.retrieve(model);
  assert.equal(one.id, model);

  // greedy, whole: the golden continuation
  const whole = await client.completions.create({ model, prompt, max_tokens: maxTokens, temperature: 0 });
  assert.equal(whole.choices[0].text, want);
  assert.equal(whole.choices[0].finish_reason, 'length');
  assert.equal(whole.usage.completion_tokens, maxTokens);
  assert.equal(whole.usage.total_tokens, whole.usage.prompt_tokens + maxTokens);

  // streamed, with usage
  const s = await collect(await client.completions.create({
    model, prompt, max_tokens: maxTokens, temperature: 0, stream: true, stream_options: { include_usage: true } }));
  assert.equal(s.text, want);
  assert.equal(s.finish, 'length');
  assert.ok(s.usage && s.usage.completion_tokens === maxTokens, `usage ${JSON.stringify(s.usage)}`);
  assert.ok(s.chunks > 10, `${s.chunks} chunks`);

  // stop sequences, whole and streamed
  const cut = want.slice(0, want.indexOf('Lily'));
  const st = await client.completions.create({ model, prompt, max_tokens: maxTokens, temperature: 0, stop: ['Lily'] });
  assert.equal(st.choices[0].text, cut);
  assert.equal(st.choices[0].finish_reason, 'stop');
  const sst = await collect(await client.completions.create({ model, prompt, max_tokens: maxTokens, temperature: 0, stop: 'Lily', stream: true }));
  assert.equal(sst.text, cut);
  assert.equal(sst.finish, 'stop');

  // seeds are reproducible
  const sampled = async (seed) => (await client.completions.create({ model, prompt, max_tokens: 30, temperature: 1, top_p: 0.95, seed })).choices[0].text;
  const a = await sampled(42), b = await sampled(42), c = await sampled(43);
  assert.equal(a, b);
  assert.notEqual(a, c);

  // refusals
  await refused(client.completions.create({ model, prompt, max_tokens: 4, suffix: 'x' }), 400, 'unsupported_parameter', 'suffix');
  await refused(client.completions.create({ model, prompt, max_tokens: 4, logprobs: 9 }), 400, 'invalid_value', 'logprobs');
  await refused(client.chat.completions.create({ model: cfg.chatModel, messages: [{ role: 'user', content: 'hi' }], response_format: { type: 'json_schema', json_schema: { name: 'id', schema: { type: 'string', format: 'email' } } } }), 400, 'unsupported_parameter', 'response_format.json_schema.schema.format');

  // structured output: the reply is JSON its schema accepts
  for (const stream of [false, true]) {
    const req = { model: cfg.chatModel, messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 60, temperature: 1,
      response_format: { type: 'json_schema', json_schema: { name: 'hero', strict: true, schema: { type: 'object', properties: { name: { type: 'string' }, kind: { enum: ['cat', 'dog'] } }, required: ['name', 'kind'], additionalProperties: false } } } };
    const text = stream ? (await collect(await client.chat.completions.create({ ...req, stream: true }))).text : (await client.chat.completions.create(req)).choices[0].message.content;
    const hero = JSON.parse(text);
    assert.equal(typeof hero.name, 'string', text);
    assert.ok(['cat', 'dog'].includes(hero.kind), text);
  }

  // logprobs: greedy picks each distribution's most likely token
  const lp = await client.completions.create({ model, prompt, max_tokens: 6, temperature: 0, logprobs: 2 });
  const l = lp.choices[0].logprobs;
  assert.equal(l.tokens.join(''), lp.choices[0].text);
  for (let i = 0; i < l.tokens.length; i++) {
    assert.ok(l.token_logprobs[i] <= 0);
    assert.equal(Math.max(...Object.values(l.top_logprobs[i])), l.token_logprobs[i]);
  }
  await refused(client.chat.completions.create({ model: cfg.chatModel, messages: [{ role: 'user', content: 'hi' }], tools: [{ type: 'function', function: { name: 'f' } }] }), 400, 'tools_unsupported', 'tools');
  await refused(client.completions.create({ model, prompt, max_tokens: 100000 }), 400, 'context_length_exceeded');
  await refused(client.completions.create({ model: 'no-such-model', prompt }), 404, 'model_not_found');
  await refused(client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] }), 400, 'chat_template_missing');
  const bad = await fetch(cfg.baseURL + '/v1/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model": ' });
  assert.equal(bad.status, 400);
  assert.equal((await bad.json()).error.code, 'invalid_json');

  // chat, whole and streamed, on the model with a template
  const messages = [{ role: 'system', content: 'Once upon' }, { role: 'user', content: ' a time' }];
  const chat = await client.chat.completions.create({ model: cfg.chatModel, messages, max_tokens: maxTokens, temperature: 0 });
  assert.equal(chat.object, 'chat.completion');
  assert.equal(chat.choices[0].message.role, 'assistant');
  assert.equal(chat.choices[0].message.content, want);
  const sc = await collect(await client.chat.completions.create({ model: cfg.chatModel, messages, max_tokens: maxTokens, temperature: 0, stream: true, stream_options: { include_usage: true } }));
  assert.equal(sc.text, want);
  assert.equal(sc.usage.completion_tokens, maxTokens);

  // aborting a stream mid-way
  const controller = new AbortController();
  const long = await client.completions.create({ model, prompt, max_tokens: 400, temperature: 1, seed: 1, stream: true }, { signal: controller.signal });
  let n = 0;
  try {
    for await (const _ of long) {
      if (++n === 3) controller.abort();
    }
  } catch (e) {
    // the client ends the iteration quietly or with its abort error
    assert.ok(e instanceof OpenAI.APIUserAbortError || e.name === 'AbortError', `abort: ${e}`);
  }
  assert.ok(n < 100, `the aborted stream went on for ${n} chunks`);
  console.log('ok');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
