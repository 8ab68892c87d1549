package llm

import "context"

// StepPast runs one step of d on ids as if n positions were cached
// (test hook: the refusal of a step past a shared cache's buffer).
func StepPast(ctx context.Context, d *Decoder, n int, ids []int) error {
	c, err := d.emptyCache(ctx)
	if err != nil {
		return err
	}
	defer c.close()
	c.n = n
	_, _, err = d.step(ctx, ids, c)
	return err
}

// StepRows runs one step of d on ids from an empty cache and returns the
// logits of the last rows positions (0: all), and how many rows came back.
func StepRows(ctx context.Context, d *Decoder, ids []int, rows int) ([]float32, int, error) {
	c, err := d.emptyCache(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer c.close()
	all, v, _, err := d.stepRows(ctx, ids, c, rows)
	if err != nil {
		return nil, 0, err
	}
	return all, len(all) / v, nil
}

// StepPattern prefills prompt, then runs rounds decode steps, the i-th
// of 1+k(i) tokens (the last token and k(i) copies of it), each drafted
// one rejected (the cache trimmed back to one new position), so every
// round adds one position as a plain step does; the cache starts over
// from the prefill after limit positions. each gets every round's k and
// the time measure took.
func StepPattern(ctx context.Context, d *Decoder, prompt []int, rounds, limit int, k func(i int) int, measure func(func()) float64, each func(i, k int, cost float64)) error {
	var c *kvCache
	last := 0
	reset := func() error {
		if c != nil {
			c.close()
		}
		var err error
		if c, err = d.emptyCache(ctx); err != nil {
			return err
		}
		lg, next, err := d.step(ctx, prompt, c)
		if err != nil {
			return err
		}
		c, last = next, argmax(lg)
		return nil
	}
	if err := reset(); err != nil {
		return err
	}
	defer func() { c.close() }()
	ids := make([]int, 0, 65)
	for i := 0; i < rounds; i++ {
		if c.n+65 > limit {
			if err := reset(); err != nil {
				return err
			}
		}
		ki := k(i)
		ids = ids[:0]
		for j := 0; j <= ki; j++ {
			ids = append(ids, last)
		}
		var err error
		cost := measure(func() {
			if ki == 0 {
				var lg []float32
				var next *kvCache
				if lg, next, err = d.step(ctx, ids, c); err == nil {
					c, last = next, argmax(lg)
				}
				return
			}
			cached := c.n
			all, v, next, e := d.stepAll(ctx, ids, c)
			if err = e; err != nil {
				return
			}
			last = argmax(all[:v])
			c, err = d.trim(next, cached+1)
		})
		if err != nil {
			return err
		}
		each(i, ki, cost)
	}
	return nil
}
