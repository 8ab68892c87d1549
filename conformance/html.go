package conformance

import (
	"fmt"
	"html/template"
	"io"
	"sort"
	"strings"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// dtypeOrder is the matrix's column order.
var dtypeOrder = []graph.DType{graph.Float32, graph.Float16, graph.BFloat16, graph.Float64, graph.Int8, graph.Int16, graph.Int32, graph.Int64, graph.Uint8, graph.Uint16, graph.Uint32, graph.Uint64, graph.Bool, graph.String}

type htmlCell struct {
	Class, Text, Title string
}

type htmlRow struct {
	Op    string
	Cells []htmlCell
}

type htmlView struct {
	R        *Report
	Content  string // the report's ContentDigest
	Signer   string // the lab key WriteFiles signs with ("" = unsigned)
	CertNote string
	Verdict  string
	VClass   string
	DTypes   []string
	Rows     []htmlRow
	Failed   []Result
	Contract []Result
	Models   []Result
	External []Result
	ExtCount map[Status]int
	NotDel   []string
	Statuses []Status
	Totals   string
}

func cellOf(rs []Result) htmlCell {
	if len(rs) == 0 {
		return htmlCell{Class: "none", Text: "", Title: "no cases"}
	}
	n := map[Status]int{}
	for _, r := range rs {
		n[r.Status]++
	}
	var parts []string
	for _, s := range Statuses {
		if n[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[s], s))
		}
	}
	c := htmlCell{Title: strings.Join(parts, ", "), Text: fmt.Sprintf("%d/%d", n[Pass], len(rs))}
	switch {
	case n[Fail] > 0:
		c.Class = "fail"
	case n[UnexpectedPass] > 0:
		c.Class = "xpass"
	case n[ExpectedFailure] > 0:
		c.Class = "xfail"
	case n[Pass] > 0 && n[Pass] == len(rs):
		c.Class = "pass"
	case n[Pass] > 0:
		c.Class = "partial"
	case n[NotDelegated] > 0:
		c.Class, c.Text = "nd", "—"
	case n[Unsupported] > 0:
		c.Class, c.Text = "unsup", "gap"
	default:
		c.Class, c.Text = "skip", "skip"
	}
	return c
}

// HTML writes a self-contained HTML report: the certification record, an
// op × dtype matrix coloured by result, every failing case with its ID,
// input shapes and first differing elements, and the other sources. The
// page names the report it renders by its ContentDigest; WriteFiles lists
// the page's own SHA-256 in the signed JSON.
func (r *Report) HTML(w io.Writer) error {
	content, err := r.ContentDigest()
	if err != nil {
		return err
	}
	return r.html(w, content, "")
}

func (r *Report) html(w io.Writer, content, signer string) error {
	v := htmlView{R: r, Content: content, Signer: signer, CertNote: certificateNote(signer), ExtCount: map[Status]int{}, Statuses: Statuses}
	c := r.Certification
	v.Verdict, v.VClass = verdictWord(c), "fail"
	if c.Passed {
		v.VClass = "pass"
	}
	var tp []string
	for _, s := range Statuses {
		if n := c.Totals.ByStatus[s]; n > 0 {
			tp = append(tp, fmt.Sprintf("%d %s", n, s))
		}
	}
	v.Totals = strings.Join(tp, " · ")
	byOp := map[string]map[string][]Result{}
	used := map[string]bool{}
	nd := map[string]int{}
	for _, res := range r.Results {
		switch res.Source {
		case SourceOp:
			if byOp[res.Op] == nil {
				byOp[res.Op] = map[string][]Result{}
			}
			byOp[res.Op][res.DType] = append(byOp[res.Op][res.DType], res)
			used[res.DType] = true
			if res.Status == NotDelegated {
				nd[res.Op]++
			}
		case SourceContract:
			v.Contract = append(v.Contract, res)
		case SourceModel:
			v.Models = append(v.Models, res)
		case SourceExternal:
			v.ExtCount[res.Status]++
			if res.Status != Pass && res.Status != Skipped && res.Status != NotDelegated {
				v.External = append(v.External, res)
			}
		}
		if res.Status == Fail || res.Status == UnexpectedPass {
			v.Failed = append(v.Failed, res)
		}
	}
	for _, dt := range dtypeOrder {
		if used[dt.String()] {
			v.DTypes = append(v.DTypes, dt.String())
		}
	}
	var opsList []string
	for op := range byOp {
		opsList = append(opsList, op)
	}
	sort.Strings(opsList)
	for _, op := range opsList {
		row := htmlRow{Op: op}
		for _, dt := range v.DTypes {
			row.Cells = append(row.Cells, cellOf(byOp[op][dt]))
		}
		v.Rows = append(v.Rows, row)
	}
	for _, op := range opsList {
		if nd[op] > 0 {
			v.NotDel = append(v.NotDel, fmt.Sprintf("%s (%d)", op, nd[op]))
		}
	}
	if len(v.Failed) > 200 {
		v.Failed = v.Failed[:200]
	}
	return htmlTmpl.Execute(w, v)
}

var htmlTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"join":  strings.Join,
	"shape": func(s []int) string { return fmt.Sprint(s) },
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Switchyard conformance: {{.R.Certification.Backend.Name}}</title>
<style>
body{font:14px/1.4 system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px;color:#1d2330}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #dde}
.badge{display:inline-block;padding:3px 10px;border-radius:4px;font-weight:600;color:#fff}
.badge.pass{background:#2e8b57}.badge.fail{background:#c0392b}
table{border-collapse:collapse} td,th{padding:3px 8px;text-align:left;vertical-align:top}
table.kv td:first-child{color:#556;white-space:nowrap} table.kv td{border-bottom:1px solid #eef}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}
table.matrix th{font-size:11px;font-weight:600;writing-mode:vertical-rl;transform:rotate(180deg);padding:6px 2px;height:64px}
table.matrix td{font-size:11px;text-align:center;min-width:38px;border:1px solid #fff}
table.matrix td.op{text-align:right;font-family:ui-monospace,Menlo,monospace;padding-right:8px;min-width:0}
.pass{background:#8fd19e}.partial{background:#d4edc9}.fail{background:#f28b82}.xpass{background:#f9b05c}
.xfail{background:#fde68a}.nd{background:#d5d8dc;color:#667}.unsup{background:#ebedef;color:#889}.skip{background:#f4f6f7;color:#99a}.none{background:#fafafa}
.legend span{display:inline-block;padding:2px 8px;margin-right:6px;border-radius:3px;font-size:12px}
.case{border:1px solid #f0c0bb;border-left:4px solid #c0392b;padding:8px 12px;margin:10px 0;background:#fffafa}
.case h3{margin:0 0 4px;font-size:14px;font-family:ui-monospace,Menlo,monospace}
table.list td{border-bottom:1px solid #eef;font-size:13px} table.list td.st{font-weight:600;white-space:nowrap}
.small{color:#667;font-size:12px}
</style></head><body>
{{$c := .R.Certification}}
<h1>Switchyard conformance — {{$c.Backend.Name}} {{$c.Backend.Version}} <span class="badge {{.VClass}}">{{.Verdict}}</span></h1>
<div class="small">{{$c.Date}} · suite {{$c.SuiteVersion}} · {{$c.Level}} level · {{$c.Totals.Cases}} cases in {{printf "%.1f" $c.DurationMS}} ms</div>
<h2>Certification record</h2>
<table class="kv">
<tr><td>backend</td><td>{{$c.Backend.Name}} {{$c.Backend.Version}} by {{$c.Backend.Vendor}} — {{$c.Backend.Description}}</td></tr>
<tr><td>device</td><td>{{$c.Backend.Device}}; loaded {{$c.Backend.Load}}{{if $c.Backend.TestedAs}}; tested as <code>{{$c.Backend.TestedAs}}</code>{{end}}; {{$c.Device.OS}}/{{$c.Device.Arch}}, {{$c.Device.CPUs}} CPUs, {{$c.Device.Go}}{{if $c.Device.Host}}, host {{$c.Device.Host}}{{end}}</td></tr>
<tr><td>binary sha256</td><td><code>{{$c.Binary.SHA256}}</code><br><span class="small">{{$c.Binary.Path}} ({{$c.Binary.Source}}) — {{$c.Binary.Note}}</span></td></tr>
<tr><td>HAL</td><td>negotiated {{$c.HALVersion}} (backend speaks {{$c.Backend.HALRange}}, host {{$c.HostHAL}})</td></tr>
<tr><td>case set</td><td><code>{{$c.CaseSetHash}}</code> · {{$c.CaseSetSize}} cases{{if $c.Filter}} · filter <code>{{$c.Filter}}</code>{{end}}{{if $c.Shards}} · shards {{range $c.Shards}}{{.Index}}/{{.Count}} {{end}}{{end}} · complete: {{$c.Complete}}</td></tr>
<tr><td>tolerances</td><td>policy {{.R.Tolerances.PolicyVersion}} (<code>{{.R.Tolerances.PolicySHA256}}</code>){{if .R.Tolerances.Profile}}<br><b>relaxed profile “{{.R.Tolerances.Profile}}”</b>: {{.R.Tolerances.ProfileDescription}}{{else}}; no relaxed profile{{end}}</td></tr>
<tr><td>totals</td><td>{{.Totals}}</td></tr>
<tr><td>certificate</td><td>{{if .Signer}}signed by lab key <code>{{.Signer}}</code>{{else}}<b>unsigned: not a certificate</b>{{end}}; report content sha256 <code>{{.Content}}</code><br><span class="small">{{.CertNote}}</span></td></tr>
</table>

<h2>Operators × dtypes</h2>
<div class="legend"><span class="pass">all pass</span><span class="partial">some pass, rest not delegated</span><span class="fail">failure</span><span class="xpass">unexpected pass</span><span class="xfail">expected failure</span><span class="nd">not delegated</span><span class="unsup">declared gap</span><span class="none">no case</span></div>
<p class="small">Cells show passed/total cases for the op and dtype; hover for the breakdown.</p>
<table class="matrix"><tr><th></th>{{range .DTypes}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr><td class="op">{{.Op}}</td>{{range .Cells}}<td class="{{.Class}}" title="{{.Title}}">{{.Text}}</td>{{end}}</tr>
{{end}}</table>
{{if .NotDel}}<p class="small">Not delegated (declined by the backend; never counted as passed): {{join .NotDel ", "}}</p>{{end}}
{{with .R.Coverage.UncoveredOps}}<p class="small">Ops with reference kernels but no generated cases yet: {{join . ", "}}</p>{{end}}

<h2>Failures ({{len .Failed}})</h2>
{{if not .Failed}}<p>None.</p>{{end}}
{{range .Failed}}<div class="case"><h3>{{.ID}}</h3>
<div><b>{{.Status}}</b>: {{.Message}}</div>
{{if .Inputs}}<div class="small">inputs: {{range .Inputs}}<code>{{.Name}}: {{.DType}}{{shape .Shape}}</code> {{end}}</div>{{end}}
{{if .Tolerance}}<div class="small">tolerance: {{.Tolerance}}</div>{{end}}
{{if .Mismatches}}<table class="list"><tr><th>output</th><th>index</th><th>got</th><th>want</th><th>ulp</th></tr>
{{range .Mismatches}}<tr><td class="mono">{{.Output}}</td><td class="mono">{{shape .Index}}</td><td class="mono">{{.Got}}</td><td class="mono">{{.Want}}</td><td>{{if .ULP}}{{.ULP}}{{end}}</td></tr>{{end}}
</table>{{end}}
{{with .Gap}}<div class="small">gap {{.Kind}} <code>{{.Pattern}}</code>: {{.Reason}}</div>{{end}}
<div class="small">reproduce: <code>switchyard conformance --backend {{$c.Backend.Name}} --filter '^{{.ID}}$'</code></div>
</div>{{end}}

<h2>HAL contract</h2>
<table class="list">{{range .Contract}}<tr><td class="st {{.Status}}">{{.Status}}</td><td class="mono">{{.ID}}</td><td>{{.Message}}</td></tr>{{end}}</table>

<h2>Models</h2>
<table class="list">{{range .Models}}<tr><td class="st {{.Status}}">{{.Status}}</td><td class="mono">{{.ID}}</td><td>{{if .Nodes}}{{.Delegated}}/{{.Nodes}} nodes delegated. {{end}}{{.Message}}</td></tr>{{end}}</table>

<h2>ONNX node tests</h2>
<p>{{range $s, $n := .ExtCount}}{{$n}} {{$s}} · {{end}}</p>
{{if .External}}<table class="list">{{range .External}}<tr><td class="st {{.Status}}">{{.Status}}</td><td class="mono">{{.ID}}</td><td>{{.Message}}{{with .Gap}} <span class="small">({{.Reason}})</span>{{end}}</td></tr>{{end}}</table>{{end}}

{{with .R.Gaps}}<h2>Declared gaps ({{.Backend}})</h2>
<table class="list">{{range .Unsupported}}<tr><td class="st">unsupported</td><td class="mono">{{.Pattern}}</td><td>{{.Reason}}</td></tr>{{end}}
{{range .ExpectedFailures}}<tr><td class="st">expected failure</td><td class="mono">{{.Pattern}}</td><td>{{.Reason}}</td></tr>{{end}}</table>{{end}}
</body></html>
`))
