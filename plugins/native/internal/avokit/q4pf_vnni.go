package avokit

import (
	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
)

// VpdpbusdBcst emits acc += u8(u) · s8(the dword at m, broadcast to every
// lane) (AVX-512 VNNI's embedded broadcast; emitted raw like Vpdpbusd).
func VpdpbusdBcst(m Mem, u, acc Op) {
	Instruction(&ir.Instruction{Opcode: "VPDPBUSD", Suffixes: []string{"BCST"}, Operands: []Op{m, u, acc}, Inputs: []Op{m, u, acc}, Outputs: []Op{acc}})
}
