#!/usr/bin/env node
// Runs a decoder step by step on ONNX Runtime (CPU) for the comparison in
// ../ort_test.go. Usage: node ort_steps.js PEER_DIR MODEL DIR
//   PEER_DIR: ../shared/peers/ort (its node_modules and tensors.js are used)
//   DIR/chain.json: {"steps": N, "present_to_past": {"present_0": "past_0", ...}}
//   DIR/step_K/input_*.pb: named TensorProtos fed at step K; from step 1 on
//     each past input is ORT's own present output of step K-1 instead.
// Writes DIR/step_K/ort_<output index>.pb (named TensorProtos).
'use strict';
const fs = require('fs');
const path = require('path');
const [peer, model, dir] = process.argv.slice(2);
if (!dir) { console.error('usage: node ort_steps.js PEER_DIR MODEL DIR'); process.exit(2); }
const ort = require(path.join(peer, 'node_modules', 'onnxruntime-node'));
const { onnx } = require(path.join(peer, 'node_modules', 'onnx-proto'));
const { readSet } = require(path.join(peer, 'tensors.js'));
const T = onnx.TensorProto.DataType;
const codes = { float32: T.FLOAT, float64: T.DOUBLE, float16: T.FLOAT16, int32: T.INT32, int64: T.INT64, int8: T.INT8, uint8: T.UINT8, bool: T.BOOL };

(async () => {
  const chain = JSON.parse(fs.readFileSync(path.join(dir, 'chain.json'), 'utf8'));
  const s = await ort.InferenceSession.create(model, { intraOpNumThreads: 1, interOpNumThreads: 1, logSeverityLevel: 3 });
  let prev = null;
  for (let k = 0; k < chain.steps; k++) {
    const stepDir = path.join(dir, 'step_' + k);
    const feeds = {};
    for (const t of readSet(stepDir, 'input_')) feeds[t.name] = t.tensor;
    if (prev) for (const [pres, past] of Object.entries(chain.present_to_past)) feeds[past] = prev[pres];
    const res = await s.run(feeds);
    s.outputNames.forEach((name, i) => {
      const t = res[name];
      const code = codes[t.type];
      if (code === undefined) throw new Error(`output ${name}: type ${t.type} not handled`);
      const d = t.data;
      const raw = Buffer.from(d.buffer, d.byteOffset, d.byteLength);
      const p = onnx.TensorProto.create({ name, dims: t.dims, dataType: code, rawData: raw });
      fs.writeFileSync(path.join(stepDir, `ort_${i}.pb`), onnx.TensorProto.encode(p).finish());
    });
    prev = res;
  }
  console.log(`ok ${chain.steps} steps`);
})().catch((e) => { console.error(e.message || e); process.exit(1); });
