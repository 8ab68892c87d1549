package main

// The native backend (optimised pure-Go CPU kernels) registers itself with
// hal.Default; by default it is placed after every other backend, just
// before the reference cpu (see backendFlags.options).
import _ "github.com/switchyard-hal/switchyard/plugins/native"
