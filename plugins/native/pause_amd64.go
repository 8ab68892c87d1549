package native

// spinPause executes PAUSE: a spin-wait hint that lets the other thread
// of an SMT core (the two threads of a 2-vCPU machine are often siblings)
// use the issue slots a spinning loop would otherwise take from it.
//
//go:noescape
func spinPause()
