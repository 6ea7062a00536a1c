package main

import (
	"io"

	"github.com/besim/besim/scenarios"
)

// cmdSchema prints the JSON Schema of scenario files (scenarios/schema.json).
func cmdSchema(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("schema", stdout, stderr)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		fs.Usage()
		return errUsage
	}
	b, err := scenarios.JSONSchema()
	if err != nil {
		return err
	}
	_, err = stdout.Write(b)
	return err
}
