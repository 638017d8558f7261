// Tests that the quickstart runs to completion and prints what its
// comments promise: in-order delivery, one retry, a clean shutdown.
package main

import (
	"context"
	"os"
)

func Example() {
	if err := run(context.Background(), os.Stdout); err != nil {
		panic(err)
	}
	// Output:
	// receiver: order-1 attempt 1 -> applied seq 1: {"order":"order-1"}
	// receiver: order-2 attempt 1 -> 503
	// receiver: order-2 attempt 2 -> applied seq 2: {"order":"order-2"}
	// receiver: order-3 attempt 1 -> applied seq 3: {"order":"order-3"}
	// store: order-1 delivered after 1 attempts (last status 200)
	// store: order-2 delivered after 2 attempts (last status 200)
	// store: order-3 delivered after 1 attempts (last status 200)
}
