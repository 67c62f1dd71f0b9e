package dpbeam

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"time"
)

func init() {
	if os.Getenv("HEAPSAMPLE") == "" {
		return
	}
	go func() {
		var max uint64
		for {
			time.Sleep(2 * time.Second)
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > max {
				max = ms.HeapInuse
				f, _ := os.Create(os.Getenv("HEAPSAMPLE"))
				pprof.Lookup("heap").WriteTo(f, 0)
				f.Close()
				fmt.Fprintf(os.Stderr, "heap peak %d MB at %s\n", max>>20, time.Now().Format("15:04:05"))
			}
		}
	}()
}
