package native

import "sync/atomic"

// Tail splitting of a single decode product's loop (runGGMLInt, one
// activation row, more than one thread): the tasks are claimed as they
// come, so a loop ends with one thread finishing its last task while the
// others wait, about half a task on average. The last tailTasks tasks a
// thread are cut into pieces of a tailDiv-th of a task (multiples of 8
// rows, of 16 in the x16 layout, at least 16 rows), so the threads end
// closer together; the rows of each output are computed as before, only
// which task computes them moves, so the bits are the same. Only tasks
// of at least tailMinBytes of weights are split: a smaller task's tail
// wait is below what a claim of the shared task counter costs.
// (Bqfuse.go's groups split their last member's tail the same way.)

// tailSplitOff turns the tail split off (measurements alternate).
var tailSplitOff atomic.Bool

const (
	tailTasks    = 2
	tailDiv      = 4
	tailMinBytes = 128 << 10
)

// tailPlan is how a loop of n rows in tasks of per rows is split: tasks
// of per rows up to row split, then tasks of tper rows to n.
type tailPlan struct {
	per, split, tper, n int
}

// tasks is the plan's number of tasks.
func (t tailPlan) tasks() int {
	main := t.split / t.per
	if t.split >= t.n {
		return (t.n + t.per - 1) / t.per
	}
	return main + (t.n-t.split+t.tper-1)/t.tper
}

// rows is task i's rows n0..n1-1.
func (t tailPlan) rows(i int) (n0, n1 int) {
	n0, per := i*t.per, t.per
	if n0 >= t.split {
		n0, per = t.split+(i-t.split/t.per)*t.tper, t.tper
	}
	return n0, min(t.n, n0+per)
}

// tailSplit is the plan of w's loop over n rows in tasks of per rows
// for m activation rows on th threads.
func (w *bqWeights) tailSplit(n, per, m, th int) tailPlan {
	t := tailPlan{per: per, split: n, tper: per, n: n}
	cnt := (n + per - 1) / per
	if m != 1 || th < 2 || cnt <= tailTasks*th || per*w.rb < tailMinBytes || tailSplitOff.Load() {
		return t
	}
	align := 8
	if w.x16 != nil {
		align = 16
	}
	tper := max((per/tailDiv)/align*align, 16)
	if tper >= per {
		return t
	}
	t.split = (cnt - tailTasks*th) * per
	t.tper = tper
	return t
}
