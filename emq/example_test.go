package emq_test

import (
	"errors"
	"fmt"

	"github.com/echomq/echomq-go/emq"
)

func ExampleNewKeys() {
	k, err := emq.NewKeys("quotes")
	if err != nil {
		panic(err)
	}
	fmt.Println(k.Pending)
	fmt.Println(k.Job("JOB0KHTOWnGLuC"))
	fmt.Println(k.Slot == emq.Slot(k.Job("JOB0KHTOWnGLuC")), k.Slot)

	_, err = emq.NewKeys("a{b}")
	fmt.Println(errors.Is(err, emq.ErrInvalidQueue), err)
	// Output:
	// emq:{quotes}:pending
	// emq:{quotes}:job:JOB0KHTOWnGLuC
	// true 3378
	// true emq: invalid queue name "a{b}": contains '{' at byte 1
}

func ExampleParseID() {
	ns, sf, err := emq.ParseID("JOB0KHTOWnGLuC")
	if err != nil {
		panic(err)
	}
	ms, node, seq := emq.SplitSnowflake(sf)
	fmt.Println(ns, sf)
	fmt.Println(emq.SnowflakeTime(sf), ms, node, seq)

	_, _, err = emq.ParseID("JOBAzL8n0Y58m8")
	fmt.Println(err)
	// Output:
	// JOB 274557032793636864
	// 2026-01-27 15:11:37.641 +0000 UTC 65459497641 0 0
	// emq: invalid branded id "JOBAzL8n0Y58m8": value does not fit 63 bits
}

func ExampleFormatID() {
	id, err := emq.FormatID("QTE", emq.MaxSnowflake)
	fmt.Println(id, err)
	// Output:
	// QTEAzL8n0Y58m7 <nil>
}

func ExampleIDGenerator() {
	gen, err := emq.NewIDGenerator(emq.JobNamespace, emq.DefaultNode())
	if err != nil {
		panic(err)
	}
	a, b := gen.Next(), gen.Next()
	fmt.Println(len(a), emq.Namespace(a), a < b)
	// Output:
	// 14 JOB true
}

func ExampleSlot() {
	fmt.Println(emq.Slot("123456789"))
	fmt.Println(emq.Hashtag("emq:{orders}:pending"), emq.Slot("emq:{orders}:pending"))
	fmt.Println(emq.Hashtag("foo{}{bar}"))
	// Output:
	// 12739
	// orders 105
	// foo{}{bar}
}
