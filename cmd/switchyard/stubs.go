package main

import "github.com/spf13/cobra"

func runCmd() *cobra.Command     { return &cobra.Command{Use: "run"} }
func inspectCmd() *cobra.Command { return &cobra.Command{Use: "inspect"} }
func benchCmd() *cobra.Command   { return &cobra.Command{Use: "bench"} }
