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
