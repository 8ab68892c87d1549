package onnxtest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/switchyard-hal/switchyard/internal/shared"
	_ "github.com/switchyard-hal/switchyard/plugins/cpu" // the runtime's fallback backend
)

// expectations is testdata/expected.txt: the ONNX tests known to fail, each
// with its reason, and the minimum pass count per suite.
type expectations struct {
	fail    map[string]string // "suite/test" → reason
	minPass map[string]int
}

func readExpectations(t *testing.T) expectations {
	t.Helper()
	f, err := os.Open("testdata/expected.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	e := expectations{fail: map[string]string{}, minPass: map[string]int{}}
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		kind, rest, _ := strings.Cut(s, " ")
		switch kind {
		case "minpass":
			suite, n, _ := strings.Cut(rest, " ")
			v, err := strconv.Atoi(strings.TrimSpace(n))
			if err != nil {
				t.Fatalf("expected.txt:%d: bad minpass", line)
			}
			e.minPass[suite] = v
		case "fail":
			name, reason, _ := strings.Cut(rest, " ")
			if strings.TrimSpace(reason) == "" {
				t.Fatalf("expected.txt:%d: %s has no reason", line, name)
			}
			e.fail[name] = strings.TrimSpace(reason)
		default:
			t.Fatalf("expected.txt:%d: unknown entry %q", line, kind)
		}
	}
	return e
}

type suite struct {
	name string // key prefix in expected.txt
	rel  string // under ../shared
	opt  Options
}

var suites = []suite{
	{"onnx-node", "testdata/onnx-node", DefaultOptions()},
	{"simple", "testdata/onnx-other/simple", DefaultOptions()},
	{"pytorch-converted", "testdata/onnx-other/pytorch-converted", DefaultOptions()},
	{"pytorch-operator", "testdata/onnx-other/pytorch-operator", DefaultOptions()},
	{"models", "testdata/models", Options{Rtol: 1e-3, Atol: 1e-4}},
}

// TestONNXSuites runs the external ONNX tests and fails on any regression
// against testdata/expected.txt: a failure not listed there, a listed
// failure that now passes (stale entry), or fewer passes than the floor.
func TestONNXSuites(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the ONNX test suites")
	}
	exp := readExpectations(t)
	for _, s := range suites {
		t.Run(s.name, func(t *testing.T) {
			root := shared.Path(t, s.rel)
			entries, err := os.ReadDir(root)
			if err != nil {
				t.Fatal(err)
			}
			var dirs []string
			for _, e := range entries {
				if e.IsDir() {
					dirs = append(dirs, filepath.Join(root, e.Name()))
				}
			}
			results := runAll(dirs, s.opt)
			pass, fail, skip := 0, 0, 0
			var unexpected, stale []string
			for _, r := range results {
				key := s.name + "/" + r.Name
				reason, expected := exp.fail[key]
				switch r.Status {
				case Pass:
					pass++
					if expected {
						stale = append(stale, fmt.Sprintf("%s passes now; remove it from expected.txt (was: %s)", key, reason))
					}
				case Fail:
					fail++
					if !expected {
						unexpected = append(unexpected, fmt.Sprintf("fail %s %s", key, r.Reason))
					}
				default:
					skip++
				}
			}
			t.Logf("%s: %d passed, %d failed, %d skipped", s.name, pass, fail, skip)
			sort.Strings(unexpected)
			for _, u := range unexpected {
				t.Errorf("unexpected failure (fix it, or add it to expected.txt with a reason): %s", u)
			}
			for _, st := range stale {
				t.Errorf("%s", st)
			}
			if min := exp.minPass[s.name]; pass < min {
				t.Errorf("%s: %d passed, below the floor of %d in expected.txt", s.name, pass, min)
			}
		})
	}
}

func runAll(dirs []string, opt Options) []Result {
	results := make([]Result, len(dirs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, d := range dirs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			results[i] = RunDir(context.Background(), d, opt)
		}()
	}
	wg.Wait()
	return results
}
