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
