package vision

import ops "github.com/switchyard-hal/switchyard/core/ops"

// schemas are the operators of this group.
var schemas = []ops.Schema{
	{OpType: "AffineGrid", MinOpset: 20, MinInputs: 2, MaxInputs: 2, Types: floatTypes, Infer: padInfer(2, affineGridInfer)},
	{OpType: "Col2Im", MinOpset: 18, MinInputs: 3, MaxInputs: 3, Types: ops.NumericTypes, Infer: padInfer(3, col2imInfer)},
	{OpType: "DeformConv", MinOpset: 19, MinInputs: 3, MaxInputs: 5, Types: floatTypes, Infer: padInfer(3, deformConvInfer)},
	{OpType: "GridSample", MinOpset: 16, MinInputs: 2, MaxInputs: 2, Types: ops.AllTypes, Infer: padInfer(2, gridSampleInfer)},
	{OpType: "NonMaxSuppression", MinOpset: 10, MinInputs: 2, MaxInputs: 5, Types: floatTypes, Infer: nmsInfer},
	{OpType: "LpPool", MinOpset: 1, MinInputs: 1, MaxInputs: 1, Types: floatTypes, Infer: padInfer(3, lpPoolInfer)},
	{OpType: "MaxUnpool", MinOpset: 9, MinInputs: 2, MaxInputs: 3, Types: floatTypes, Infer: padInfer(3, maxUnpoolInfer)},
	{OpType: "RoiAlign", MinOpset: 10, MinInputs: 3, MaxInputs: 3, Types: floatTypes, Infer: padInfer(2, roiAlignInfer)},
	{OpType: "MaxRoiPool", MinOpset: 1, MinInputs: 2, MaxInputs: 2, Types: floatTypes, Infer: padInfer(2, maxRoiPoolInfer)},
}

func init() {
	for _, s := range schemas {
		ops.Register(s)
	}
}
