package tflite

import "fmt"

// builtinNames are the BuiltinOperator enum's names by value (0..161).
var builtinNames = [...]string{
	"ADD", "AVERAGE_POOL_2D", "CONCATENATION", "CONV_2D", "DEPTHWISE_CONV_2D", "DEPTH_TO_SPACE", "DEQUANTIZE",
	"EMBEDDING_LOOKUP", "FLOOR", "FULLY_CONNECTED", "HASHTABLE_LOOKUP", "L2_NORMALIZATION", "L2_POOL_2D",
	"LOCAL_RESPONSE_NORMALIZATION", "LOGISTIC", "LSH_PROJECTION", "LSTM", "MAX_POOL_2D", "MUL", "RELU",
	"RELU_N1_TO_1", "RELU6", "RESHAPE", "RESIZE_BILINEAR", "RNN", "SOFTMAX", "SPACE_TO_DEPTH", "SVDF", "TANH",
	"CONCAT_EMBEDDINGS", "SKIP_GRAM", "CALL", "CUSTOM", "EMBEDDING_LOOKUP_SPARSE", "PAD",
	"UNIDIRECTIONAL_SEQUENCE_RNN", "GATHER", "BATCH_TO_SPACE_ND", "SPACE_TO_BATCH_ND", "TRANSPOSE", "MEAN",
	"SUB", "DIV", "SQUEEZE", "UNIDIRECTIONAL_SEQUENCE_LSTM", "STRIDED_SLICE", "BIDIRECTIONAL_SEQUENCE_RNN",
	"EXP", "TOPK_V2", "SPLIT", "LOG_SOFTMAX", "DELEGATE", "BIDIRECTIONAL_SEQUENCE_LSTM", "CAST", "PRELU",
	"MAXIMUM", "ARG_MAX", "MINIMUM", "LESS", "NEG", "PADV2", "GREATER", "GREATER_EQUAL", "LESS_EQUAL", "SELECT",
	"SLICE", "SIN", "TRANSPOSE_CONV", "SPARSE_TO_DENSE", "TILE", "EXPAND_DIMS", "EQUAL", "NOT_EQUAL", "LOG",
	"SUM", "SQRT", "RSQRT", "SHAPE", "POW", "ARG_MIN", "FAKE_QUANT", "REDUCE_PROD", "REDUCE_MAX", "PACK",
	"LOGICAL_OR", "ONE_HOT", "LOGICAL_AND", "LOGICAL_NOT", "UNPACK", "REDUCE_MIN", "FLOOR_DIV", "REDUCE_ANY",
	"SQUARE", "ZEROS_LIKE", "FILL", "FLOOR_MOD", "RANGE", "RESIZE_NEAREST_NEIGHBOR", "LEAKY_RELU",
	"SQUARED_DIFFERENCE", "MIRROR_PAD", "ABS", "SPLIT_V", "UNIQUE", "CEIL", "REVERSE_V2", "ADD_N", "GATHER_ND",
	"COS", "WHERE", "RANK", "ELU", "REVERSE_SEQUENCE", "MATRIX_DIAG", "QUANTIZE", "MATRIX_SET_DIAG", "ROUND",
	"HARD_SWISH", "IF", "WHILE", "NON_MAX_SUPPRESSION_V4", "NON_MAX_SUPPRESSION_V5", "SCATTER_ND", "SELECT_V2",
	"DENSIFY", "SEGMENT_SUM", "BATCH_MATMUL", "PLACEHOLDER_FOR_GREATER_OP_CODES", "CUMSUM", "CALL_ONCE",
	"BROADCAST_TO", "RFFT2D", "CONV_3D", "IMAG", "REAL", "COMPLEX_ABS", "HASHTABLE", "HASHTABLE_FIND",
	"HASHTABLE_IMPORT", "HASHTABLE_SIZE", "REDUCE_ALL", "CONV_3D_TRANSPOSE", "VAR_HANDLE", "READ_VARIABLE",
	"ASSIGN_VARIABLE", "BROADCAST_ARGS", "RANDOM_STANDARD_NORMAL", "BUCKETIZE", "RANDOM_UNIFORM", "MULTINOMIAL",
	"GELU", "DYNAMIC_UPDATE_SLICE", "RELU_0_TO_1", "UNSORTED_SEGMENT_PROD", "UNSORTED_SEGMENT_MAX",
	"UNSORTED_SEGMENT_SUM", "ATAN2", "UNSORTED_SEGMENT_MIN", "SIGN", "BITCAST", "BITWISE_XOR", "RIGHT_SHIFT",
}

// Builtin operator codes the converter handles.
const (
	opADD                          = 0
	opAVERAGE_POOL_2D              = 1
	opCONCATENATION                = 2
	opCONV_2D                      = 3
	opDEPTHWISE_CONV_2D            = 4
	opDEQUANTIZE                   = 6
	opFULLY_CONNECTED              = 9
	opLOGISTIC                     = 14
	opMAX_POOL_2D                  = 17
	opMUL                          = 18
	opRELU                         = 19
	opRELU_N1_TO_1                 = 20
	opRELU6                        = 21
	opRESHAPE                      = 22
	opRESIZE_BILINEAR              = 23
	opSOFTMAX                      = 25
	opTANH                         = 28
	opCUSTOM                       = 32
	opPAD                          = 34
	opTRANSPOSE                    = 39
	opMEAN                         = 40
	opSUB                          = 41
	opDIV                          = 42
	opSQUEEZE                      = 43
	opUNIDIRECTIONAL_SEQUENCE_LSTM = 44
	opSTRIDED_SLICE                = 45
	opSPLIT                        = 49
	opPRELU                        = 54
	opMAXIMUM                      = 55
	opMINIMUM                      = 57
	opPADV2                        = 60
	opSLICE                        = 65
	opTRANSPOSE_CONV               = 67
	opEXPAND_DIMS                  = 70
	opSUM                          = 74
	opQUANTIZE                     = 114
	opHARD_SWISH                   = 117
	opRESIZE_NEAREST_NEIGHBOR      = 97
	opLEAKY_RELU                   = 98
	opARG_MAX                      = 56
	opGATHER                       = 36
	opPACK                         = 83
	opUNPACK                       = 88
	opSQUARED_DIFFERENCE           = 99
	opRSQRT                        = 76
	opSQRT                         = 75
	opEXP                          = 47
	opLOG                          = 73
	opABS                          = 101
	opNEG                          = 59
	opBATCH_MATMUL                 = 126
	opCAST                         = 53
	opSPLIT_V                      = 102
	opREDUCE_MAX                   = 82
	opDEPTH_TO_SPACE               = 5
	opSPACE_TO_DEPTH               = 26
	opDENSIFY                      = 124
)

func builtinName(code int32) string {
	if code >= 0 && int(code) < len(builtinNames) {
		return builtinNames[code]
	}
	return fmt.Sprintf("BUILTIN_%d", code)
}
