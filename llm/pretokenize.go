package llm

import (
	"fmt"
	"unicode"
)

// A pre-tokenizer cuts text into words before BPE merges run on each;
// merges never cross a word boundary. The GGUF key tokenizer.ggml.pre
// names which one a model was trained with. Each is a sequence of split
// steps; a step cuts every word of the previous step into pieces that
// cover it (the pieces its pattern matches and the gaps between them),
// as llama.cpp applies a pre-tokenizer's regular expressions one after
// another. The patterns use look-ahead, which Go's regexp lacks, so each
// is a hand-written scanner here, named after the expression it follows.

// splitStep returns the cut points of one word: the end offsets (in
// runes, increasing, the last len(w)) of the pieces covering w.
type splitStep func(w []rune, cuts []int) []int

// preTokenizer is a named sequence of steps.
type preTokenizer struct {
	name  string
	steps []splitStep
}

// character classes as llama.cpp's Unicode tables define them: \s is the
// White_Space property, \p{L}, \p{N}, \p{M}, \p{P} the general categories.
func isWS(r rune) bool     { return r >= 0 && unicode.Is(unicode.White_Space, r) }
func isLetter(r rune) bool { return r >= 0 && unicode.IsLetter(r) }
func isNumber(r rune) bool { return r >= 0 && unicode.IsNumber(r) }
func isMark(r rune) bool   { return r >= 0 && unicode.IsMark(r) }
func isPunct(r rune) bool  { return r >= 0 && unicode.IsPunct(r) }

// preTokenizers maps tokenizer.ggml.pre values to their pre-tokenizer.
// Values naming the same expressions share one entry.
func lookupPreTokenizer(pre string) (*preTokenizer, bool) {
	gpt2 := []splitStep{scanGPT2}
	digitsThenGPT2 := []splitStep{isolateEach(isNumber), scanGPT2}
	switch pre {
	case "", "default":
		return &preTokenizer{"default", []splitStep{
			matchRuns(func(r rune) bool { return isPunct(r) || isOneOf(r, "$+<=>^~|") }),
			scanGPT2,
			matchRuns(isNumber),
			asciiDigitTriples,
		}}, true
	case "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "dbrx", "smaug-bpe", "chatglm-bpe", "glm4":
		return &preTokenizer{"llama3", []splitStep{llama3Scanner(3, false)}}, true
	case "qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "stablelm2", "megrez", "hunyuan", "solar-open", "grok-2":
		return &preTokenizer{"qwen2", []splitStep{llama3Scanner(1, false)}}, true
	case "qwen35":
		return &preTokenizer{"qwen35", []splitStep{llama3Scanner(1, true)}}, true
	case "gpt-2", "phi-2", "mpt", "olmo", "jais", "trillion", "granite-docling", "exaone4", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum", "modern-bert", "jina-v1-en", "jina-v2-code", "roberta-bpe":
		return &preTokenizer{"gpt2", gpt2}, true
	case "starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b", "mellum2":
		return &preTokenizer{"starcoder", digitsThenGPT2}, true
	case "falcon":
		return &preTokenizer{"falcon", []splitStep{
			matchRuns(func(r rune) bool { return isPunct(r) || isOneOf(r, "$+<=>^~|`") }),
			scanGPT2,
			asciiDigitTriples,
		}}, true
	case "deepseek-coder":
		return &preTokenizer{"deepseek-coder", []splitStep{
			isolateEach(func(r rune) bool { return r == '\r' || r == '\n' }),
			spaceThenRun(isLetter),
			spaceThenRun(isPunct),
			matchRuns(isCJKRange),
			isolateEach(isNumber),
		}}, true
	case "deepseek-llm":
		return &preTokenizer{"deepseek-llm", []splitStep{
			isolateEach(func(r rune) bool { return r == '\r' || r == '\n' }),
			spaceThenRun(func(r rune) bool { return unicode.Is(deepseekLetters, r) }),
			spaceThenRun(isDeepseekPunct),
			trailingSpace,
			matchRuns(isCJKRange),
			matchRuns(isNumber),
		}}, true
	case "gemma4", "granite-embed-multi-311m", "sarvam-moe":
		return &preTokenizer{"newlines", []splitStep{newlineRuns}}, true
	}
	return nil, false
}

func isOneOf(r rune, set string) bool {
	for _, c := range set {
		if r == c {
			return true
		}
	}
	return false
}

// isCJKRange is deepseek-coder's [一-龥ࠀ-一가-퟿] (U+4E00–U+9FA5,
// U+0800–U+4E00, U+AC00–U+D7FF), against text whose non-ASCII white
// space llama.cpp replaces by a vertical tab before matching.
func isCJKRange(r rune) bool {
	return !isWS(r) && (r >= 0x4E00 && r <= 0x9FA5 || r >= 0x0800 && r <= 0x4E00 || r >= 0xAC00 && r <= 0xD7FF)
}

// deepseekLetters is the letter class of DeepSeek LLM's pre-tokenizer:
// Latin, Greek, Cyrillic, Armenian capitals, Georgian, Cherokee, Glagolitic,
// Coptic and other cased letters, as its tokenizer.json lists them.
var deepseekLetters = &unicode.RangeTable{
	R16: []unicode.Range16{
		{0x41, 0x5A, 1}, {0x61, 0x7A, 1}, {0xB5, 0xB5, 1}, {0xC0, 0xD6, 1}, {0xD8, 0xF6, 1}, {0xF8, 0x1BA, 1},
		{0x1BC, 0x1BF, 1}, {0x1C4, 0x293, 1}, {0x295, 0x2AF, 1}, {0x370, 0x373, 1}, {0x376, 0x377, 1},
		{0x37B, 0x37D, 1}, {0x37F, 0x37F, 1}, {0x386, 0x386, 1}, {0x388, 0x38A, 1}, {0x38C, 0x38C, 1},
		{0x38E, 0x3A1, 1}, {0x3A3, 0x3F5, 1}, {0x3F7, 0x481, 1}, {0x48A, 0x52F, 1}, {0x531, 0x556, 1},
		{0x10A0, 0x10C5, 1}, {0x13A0, 0x13F5, 1}, {0x13F8, 0x13FD, 1}, {0x1C90, 0x1CBA, 1}, {0x1CBD, 0x1CBF, 1},
		{0x1D00, 0x1D2B, 1}, {0x1D6B, 0x1D77, 1}, {0x1D79, 0x1D9A, 1}, {0x1E00, 0x1F15, 1}, {0x1F18, 0x1F1D, 1},
		{0x1F20, 0x1F45, 1}, {0x1F48, 0x1F4D, 1}, {0x1F50, 0x1F57, 1}, {0x1F59, 0x1F5F, 2}, {0x1F60, 0x1F7D, 1},
		{0x1F80, 0x1FB4, 1}, {0x1FB6, 0x1FBC, 1}, {0x1FBE, 0x1FBE, 1}, {0x1FC2, 0x1FC4, 1}, {0x1FC6, 0x1FCC, 1},
		{0x1FD0, 0x1FD3, 1}, {0x1FD6, 0x1FDB, 1}, {0x1FE0, 0x1FEC, 1}, {0x1FF2, 0x1FF4, 1}, {0x1FF6, 0x1FFC, 1},
		{0x2102, 0x2107, 5}, {0x210A, 0x2113, 1}, {0x2115, 0x2115, 1}, {0x2119, 0x211D, 1}, {0x2124, 0x2128, 2},
		{0x212A, 0x212D, 1}, {0x212F, 0x2134, 1}, {0x2139, 0x2139, 1}, {0x213C, 0x213F, 1}, {0x2145, 0x2149, 1},
		{0x214E, 0x214E, 1}, {0x2183, 0x2184, 1}, {0x2C00, 0x2C7B, 1}, {0x2C7E, 0x2CE4, 1}, {0x2CEB, 0x2CEE, 1},
		{0x2CF2, 0x2CF3, 1}, {0xA640, 0xA66D, 1}, {0xA680, 0xA69B, 1}, {0xA722, 0xA76F, 1}, {0xA771, 0xA787, 1},
		{0xA78B, 0xA78E, 1}, {0xAB70, 0xABBF, 1}, {0xFB00, 0xFB06, 1}, {0xFB13, 0xFB17, 1}, {0xFF21, 0xFF3A, 1},
		{0xFF41, 0xFF5A, 1},
	},
	R32: []unicode.Range32{
		{0x10400, 0x1044F, 1}, {0x104B0, 0x104D3, 1}, {0x104D8, 0x104FB, 1}, {0x10C80, 0x10CB2, 1},
		{0x10CC0, 0x10CF2, 1}, {0x118A0, 0x118DF, 1}, {0x1E900, 0x1E943, 1},
	},
	LatinOffset: 5,
}

// isDeepseekPunct is DeepSeek LLM's punctuation class: ASCII ! to / and
// : to ~, their full-width forms, the curly quotes ‘ to ‟, and 、 。.
func isDeepseekPunct(r rune) bool {
	return r >= '!' && r <= '/' || r >= ':' && r <= '~' || r >= 0xFF01 && r <= 0xFF0F || r >= 0xFF1A && r <= 0xFF5E ||
		r >= 0x2018 && r <= 0x201F || r >= 0x3001 && r <= 0x3002
}

// trailingSpace matches \s+$: the white space that ends a word.
func trailingSpace(w []rune, cuts []int) []int {
	i := len(w)
	for i > 0 && isWS(w[i-1]) {
		i--
	}
	if i < len(w) {
		return spansToCuts(len(w), [][2]int{{i, len(w)}}, cuts)
	}
	return append(cuts, len(w))
}

// runSplit applies the steps to text's runes and returns the words.
func (p *preTokenizer) split(rs []rune) [][]rune {
	if len(rs) == 0 {
		return nil
	}
	cuts := []int{len(rs)}
	for _, step := range p.steps {
		var next []int
		start := 0
		for _, end := range cuts {
			for _, c := range step(rs[start:end], nil) {
				next = append(next, start+c)
			}
			start = end
		}
		cuts = next
	}
	words := make([][]rune, 0, len(cuts))
	start := 0
	for _, end := range cuts {
		if end > start {
			words = append(words, rs[start:end])
		}
		start = end
	}
	return words
}

// strings splits s into words.
func (p *preTokenizer) strings(s string) []string {
	words := p.split([]rune(s))
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = string(w)
	}
	return out
}

// spans turns a word's matches (start, end pairs, increasing, not
// overlapping) into cut points: each gap and each match is a piece.
func spansToCuts(n int, spans [][2]int, cuts []int) []int {
	at := 0
	for _, s := range spans {
		if s[0] > at {
			cuts = append(cuts, s[0])
		}
		if s[1] > s[0] {
			cuts = append(cuts, s[1])
		}
		at = s[1]
	}
	if at < n {
		cuts = append(cuts, n)
	}
	return cuts
}

// matchRuns matches maximal runs of class members ([class]+).
func matchRuns(in func(rune) bool) splitStep {
	return func(w []rune, cuts []int) []int {
		var spans [][2]int
		for i := 0; i < len(w); {
			if !in(w[i]) {
				i++
				continue
			}
			j := i + 1
			for j < len(w) && in(w[j]) {
				j++
			}
			spans = append(spans, [2]int{i, j})
			i = j
		}
		return spansToCuts(len(w), spans, cuts)
	}
}

// isolateEach makes every class member a piece of its own (\p{N}).
func isolateEach(in func(rune) bool) splitStep {
	return func(w []rune, cuts []int) []int {
		var spans [][2]int
		for i, r := range w {
			if in(r) {
				spans = append(spans, [2]int{i, i + 1})
			}
		}
		return spansToCuts(len(w), spans, cuts)
	}
}

// spaceThenRun matches \s?[class]+: a run of the class with the white
// space before it, if any.
func spaceThenRun(in func(rune) bool) splitStep {
	return func(w []rune, cuts []int) []int {
		var spans [][2]int
		for i := 0; i < len(w); {
			j := i
			if isWS(w[j]) && j+1 < len(w) && in(w[j+1]) {
				j++
			}
			if !in(w[j]) {
				i++
				continue
			}
			k := j + 1
			for k < len(w) && in(w[k]) {
				k++
			}
			spans = append(spans, [2]int{i, k})
			i = k
		}
		return spansToCuts(len(w), spans, cuts)
	}
}

// asciiDigitTriples matches [0-9][0-9][0-9], left to right.
func asciiDigitTriples(w []rune, cuts []int) []int {
	var spans [][2]int
	dig := func(r rune) bool { return r >= '0' && r <= '9' }
	for i := 0; i+3 <= len(w); {
		if dig(w[i]) && dig(w[i+1]) && dig(w[i+2]) {
			spans = append(spans, [2]int{i, i + 3})
			i += 3
			continue
		}
		i++
	}
	return spansToCuts(len(w), spans, cuts)
}

// newlineRuns cuts into runs of '\n' and runs of anything else
// ([^\n]+|[\n]+).
func newlineRuns(w []rune, cuts []int) []int {
	for i := 0; i < len(w); {
		nl := w[i] == '\n'
		j := i + 1
		for j < len(w) && (w[j] == '\n') == nl {
			j++
		}
		cuts = append(cuts, j)
		i = j
	}
	return cuts
}

// contraction reports the length of an English contraction at w[i:]
// ('s 't 'm 'd 're 've 'll), 0 if none; fold makes it case-insensitive.
func contraction(w []rune, i int, fold bool) int {
	if w[i] != '\'' || i+1 >= len(w) {
		return 0
	}
	low := func(r rune) rune {
		if fold && r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}
	switch low(w[i+1]) {
	case 's', 't', 'm', 'd':
		return 2
	}
	if i+2 < len(w) {
		a, b := low(w[i+1]), low(w[i+2])
		if a == 'r' && b == 'e' || a == 'v' && b == 'e' || a == 'l' && b == 'l' {
			return 3
		}
	}
	return 0
}

// scanGPT2 follows GPT-2's expression
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// (the last alternative applies where the one before leaves nothing:
// white space at the end of the word).
func scanGPT2(w []rune, cuts []int) []int {
	n := len(w)
	at := func(i int) rune {
		if i < n {
			return w[i]
		}
		return -1
	}
	other := func(r rune) bool { return r >= 0 && !isWS(r) && !isLetter(r) && !isNumber(r) }
	for i := 0; i < n; {
		if c := contraction(w, i, false); c > 0 {
			i += c
			cuts = append(cuts, i)
			continue
		}
		j := i
		if w[i] == ' ' {
			j = i + 1
		}
		r := at(j)
		var class func(rune) bool
		switch {
		case isLetter(r):
			class = isLetter
		case isNumber(r):
			class = isNumber
		case other(r):
			class = other
		}
		if class != nil {
			for j < n && class(w[j]) {
				j++
			}
			i = j
			cuts = append(cuts, i)
			continue
		}
		k := i
		for k < n && isWS(w[k]) {
			k++
		}
		switch {
		case k-i > 1 && k < n: // \s+(?!\S): leave the last space to the next word
			i = k - 1
		case k > i:
			i = k
		default:
			i++
		}
		cuts = append(cuts, i)
	}
	return cuts
}

// llama3Scanner follows Llama 3's expression and its relatives:
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// digits is the longest number run of one piece (3 for Llama 3, 1 for
// Qwen 2); marks makes letter runs take combining marks too ([\p{L}\p{M}]+,
// Qwen 3.5), and keeps marks out of the punctuation runs.
func llama3Scanner(digits int, marks bool) splitStep {
	word := isLetter
	if marks {
		word = func(r rune) bool { return isLetter(r) || isMark(r) }
	}
	return func(w []rune, cuts []int) []int {
		n := len(w)
		at := func(i int) rune {
			if i < n {
				return w[i]
			}
			return -1
		}
		other := func(r rune) bool { return r >= 0 && !isWS(r) && !word(r) && !isNumber(r) }
		for i := 0; i < n; {
			r := w[i]
			if c := contraction(w, i, true); c > 0 {
				i += c
				cuts = append(cuts, i)
				continue
			}
			// [^\r\n\p{L}\p{N}]?\p{L}+
			if r != '\r' && r != '\n' && !isNumber(r) && (word(r) || word(at(i+1))) {
				i++
				for i < n && word(w[i]) {
					i++
				}
				cuts = append(cuts, i)
				continue
			}
			// \p{N}{1,digits}
			if isNumber(r) {
				j := i
				for j < n && isNumber(w[j]) && j-i < digits {
					j++
				}
				i = j
				cuts = append(cuts, i)
				continue
			}
			// ' ?[^\s\p{L}\p{N}]+[\r\n]*'
			j := i
			if r == ' ' {
				j++
			}
			if other(at(j)) || r == ' ' && j == n {
				for j < n && other(w[j]) {
					j++
				}
				for j < n && (w[j] == '\r' || w[j] == '\n') {
					j++
				}
				i = j
				cuts = append(cuts, i)
				continue
			}
			k, lastNL := i, -1
			for k < n && isWS(w[k]) {
				if w[k] == '\r' || w[k] == '\n' {
					lastNL = k + 1
				}
				k++
			}
			switch {
			case lastNL > 0: // \s*[\r\n]+
				i = lastNL
			case k-i > 1 && k < n: // \s+(?!\S)
				i = k - 1
			case k > i: // \s+
				i = k
			default:
				i++
			}
			cuts = append(cuts, i)
		}
		return cuts
	}
}

// errUnknownPre is the error for a pre-tokenizer this package lacks.
func errUnknownPre(pre string) error {
	return fmt.Errorf("llm: GGUF pre-tokenizer %q is not supported (tokenizer.ggml.pre)", pre)
}
