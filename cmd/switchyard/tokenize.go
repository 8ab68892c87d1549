package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/switchyard-hal/switchyard/llm"
)

func init() { extraCommands = append(extraCommands, tokenizeCmd) }

func tokenizeCmd() *cobra.Command {
	var asJSON, addSpecial, parseSpecial bool
	var split string
	cmd := &cobra.Command{
		Use:   "tokenize MODEL [TEXT] [--json] [--add-special] [--parse-special] [--split SEP]",
		Short: "Print the token ids of a text with a model's tokenizer (GGUF, or a Hugging Face tokenizer.json)",
		Long: `Prints the token ids of TEXT (standard input, byte for byte, when TEXT is
omitted), space separated, as llama.cpp's tokenizer tests write them; --json
prints a JSON array instead. MODEL is a GGUF file (its tokenizer.* metadata:
sentencepiece, byte-level BPE with its pre-tokenizer, Gemma 4's) or a
tokenizer.json. As in llama.cpp's test-tokenizer-0, BOS/EOS are added only
with --add-special (and only as the model asks, tokenizer.ggml.add_bos_token
and add_eos_token), and special-token texts such as <|im_start|> are plain
text unless --parse-special (user-defined tokens are always recognised).
--split SEP tokenizes each SEP-separated part of the input on a line of its
own (a SEP at the very end closes the last part); escapes \n and \t in SEP
are read as newline and tab.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var text string
			if len(args) == 2 {
				text = args[1]
			} else {
				b, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), 1<<30))
				if err != nil {
					return err
				}
				text = string(b)
			}
			encode, err := loadEncoder(args[0], addSpecial, parseSpecial)
			if err != nil {
				return err
			}
			parts := []string{text}
			if split != "" {
				sep := strings.NewReplacer(`\n`, "\n", `\t`, "\t").Replace(split)
				parts = strings.Split(text, sep)
				if len(parts) > 1 && parts[len(parts)-1] == "" {
					parts = parts[:len(parts)-1]
				}
			}
			out := cmd.OutOrStdout()
			for _, p := range parts {
				ids, err := encode(p)
				if err != nil {
					return err
				}
				if asJSON {
					b, _ := json.Marshal(ids)
					if ids == nil {
						b = []byte("[]")
					}
					fmt.Fprintln(out, string(b))
					continue
				}
				var sb strings.Builder
				for _, id := range ids {
					sb.WriteByte(' ')
					sb.WriteString(strconv.Itoa(id))
				}
				fmt.Fprintln(out, sb.String())
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of ids per text")
	cmd.Flags().BoolVar(&addSpecial, "add-special", false, "add BOS/EOS as the model asks")
	cmd.Flags().BoolVar(&parseSpecial, "parse-special", false, "turn control-token texts in the input into those tokens")
	cmd.Flags().StringVar(&split, "split", "", "tokenize each part of the input between these separators on its own line")
	return cmd
}

// loadEncoder opens MODEL's tokenizer and returns its encode function.
func loadEncoder(path string, addSpecial, parseSpecial bool) (func(string) ([]int, error), error) {
	if isGGUF(path) {
		v, err := llm.LoadGGUFVocab(path)
		if err != nil {
			return nil, err
		}
		return func(s string) ([]int, error) { return v.Tokenize(s, addSpecial, parseSpecial) }, nil
	}
	if strings.HasSuffix(path, ".json") {
		t, err := llm.LoadHFTokenizer(path)
		if err != nil {
			return nil, err
		}
		return func(s string) ([]int, error) { return t.Encode(s, addSpecial) }, nil
	}
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	return nil, errors.New("tokenize: MODEL must be a GGUF file or a tokenizer.json")
}
