package postgres_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/canonkb/canon/internal/dbtest"
)

// sqlc passes vector parameters as pointers; they go out in binary like values,
// and a nil pointer is NULL.
func TestVectorPointersGoInBinary(t *testing.T) {
	pool := dbtest.Pool(t)
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	var oid uint32
	if err := conn.QueryRow(ctx, "SELECT 'vector'::regtype::oid").Scan(&oid); err != nil {
		t.Fatal(err)
	}
	v := pgvector.NewVector([]float32{1, 2.5, -3})
	want, err := v.EncodeBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := conn.Conn().TypeMap().Encode(oid, pgx.BinaryFormatCode, &v, nil)
	if err != nil {
		t.Fatalf("encode *pgvector.Vector in binary: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("*pgvector.Vector encodes as %x, the value as %x", got, want)
	}
	// The same bytes also come out of the driver.Valuer detour (print as text,
	// parse, encode): what tells the two apart is that the detour allocates the
	// text of every number.
	wide := pgvector.NewVector(make([]float32, 384))
	buf := make([]byte, 0, 4096)
	if allocs := testing.AllocsPerRun(50, func() {
		if _, err := conn.Conn().TypeMap().Encode(oid, pgx.BinaryFormatCode, &wide, buf[:0]); err != nil {
			t.Fatal(err)
		}
	}); allocs > 4 {
		t.Errorf("encoding a 384-d *pgvector.Vector allocates %.0f times: it went through its text form", allocs)
	}

	var text string
	if err := pool.QueryRow(ctx, "SELECT $1::vector::text", &v).Scan(&text); err != nil || text != "[1,2.5,-3]" {
		t.Errorf("round trip: %q, %v", text, err)
	}
	var isNull bool
	if err := pool.QueryRow(ctx, "SELECT $1::vector IS NULL", (*pgvector.Vector)(nil)).Scan(&isNull); err != nil || !isNull {
		t.Errorf("nil *pgvector.Vector: IS NULL = %v, %v", isNull, err)
	}
}

// A pgvector.Vector goes to a halfvec parameter or column in binary, as the
// HalfVector of the same numbers (no text detour), and a halfvec scans into a
// pgvector.Vector.
func TestVectorsGoToHalfvecInBinary(t *testing.T) {
	pool := dbtest.Pool(t)
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	var oid uint32
	if err := conn.QueryRow(ctx, "SELECT 'halfvec'::regtype::oid").Scan(&oid); err != nil {
		t.Fatal(err)
	}
	nums := []float32{1, 2.5, -3, 0.1}
	want, err := conn.Conn().TypeMap().Encode(oid, pgx.BinaryFormatCode, pgvector.NewHalfVector(nums), nil)
	if err != nil {
		t.Fatal(err)
	}
	v := pgvector.NewVector(nums)
	for _, value := range []any{v, &v} {
		got, err := conn.Conn().TypeMap().Encode(oid, pgx.BinaryFormatCode, value, nil)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%T as halfvec: %x, %v; want %x", value, got, err, want)
		}
	}
	wide := pgvector.NewVector(make([]float32, 384))
	buf := make([]byte, 0, 4096)
	if allocs := testing.AllocsPerRun(50, func() {
		if _, err := conn.Conn().TypeMap().Encode(oid, pgx.BinaryFormatCode, &wide, buf[:0]); err != nil {
			t.Fatal(err)
		}
	}); allocs > 8 {
		t.Errorf("encoding a 384-d *pgvector.Vector as halfvec allocates %.0f times: it went through its text form", allocs)
	}
	var back pgvector.Vector
	if err := pool.QueryRow(ctx, "SELECT $1::halfvec", &v).Scan(&back); err != nil {
		t.Fatal(err)
	}
	if got := back.Slice(); len(got) != 4 || got[0] != 1 || got[1] != 2.5 || got[2] != -3 || got[3] < 0.0999 || got[3] > 0.1001 {
		t.Errorf("round trip through halfvec: %v", got)
	}
}
