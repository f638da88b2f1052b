package embed
import ("context";"testing";"time";"sync")
func TestTenK(t *testing.T){
	chunks := syntheticChunks(10000, 300, 2)
	h := NewHash(384)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range 2 { wg.Go(func(){ h.EmbedDocuments(context.Background(), chunks[w*5000:(w+1)*5000]) }) }
	wg.Wait()
	t.Logf("10k chunks on 2 goroutines: %v", time.Since(start))
	start = time.Now()
	h.EmbedDocuments(context.Background(), chunks)
	t.Logf("10k chunks on 1 goroutine: %v", time.Since(start))
}
