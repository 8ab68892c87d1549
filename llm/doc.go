// Package llm generates text with decoder language models on Switchyard:
// a decoder is an ordinary model placed on the engine's backends, and this
// package runs its token loop — tokenize the prompt, prefill, then one
// decode step per token with the key/value cache fed back — and samples
// (greedy at temperature 0, else temperature, top-k and top-p with a seed).
//
// Supported today: ONNX decoders whose inputs are input_ids plus past_*
// key/value inputs with a present_* output for each (stories260K_kv.onnx,
// Hugging Face Optimum's past_key_values.N.key layout), and the Llama
// graphs formats/llama builds from GGUF files and llama2.c checkpoints (same
// interface). Tokenizers: llama2.c's tokenizer.bin, a GGUF file's own
// tokenizer as llama.cpp encodes it (Vocab: sentencepiece, byte-level BPE
// with the pre-tokenizer tokenizer.ggml.pre names, Gemma 4's BPE; special
// tokens, add_bos/add_eos, the end-of-generation ids), and Hugging Face
// tokenizer.json BPE, byte-level (GPT-2) or sentencepiece-style with byte
// fallback (Llama) (HFTokenizer). Positions follow llama2.c: BOS is
// position 0, Steps counts positions, prompt included. Speculative runs
// greedy speculative decoding with a draft decoder.
//
// Chat: ChatTemplate renders a model's Jinja chat template as Hugging
// Face's apply_chat_template does with Jinja2 (messages, tools,
// add_generation_prompt, enable_thinking), and Chat runs a multi-turn
// conversation that keeps the KV cache between turns, prefilling only the
// tokens of each turn that are not cached yet.
//
// The KV cache is the model's own present outputs fed back as the next
// step's past inputs: the graph concatenates past and new keys, so each
// step allocates a cache one position longer (a preallocated cache written
// in place needs a runtime feature the executor does not have yet).
package llm
