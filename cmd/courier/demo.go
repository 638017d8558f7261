package main

import (
	"context"
	"errors"
	"io"
)

func demo(context.Context, []string, io.Writer, io.Writer) error {
	return errors.New("demo: not built yet")
}
