package main

import "github.com/spf13/cobra"

func newBenchLatencyCmd() *cobra.Command {
	return &cobra.Command{Use: "latency", Short: "(in progress)", Hidden: true}
}
