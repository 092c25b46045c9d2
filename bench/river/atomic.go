package main

import "sync/atomic"

type atomicInt struct{ v atomic.Int64 }

func (a *atomicInt) add(n int64) { a.v.Add(n) }
func (a *atomicInt) load() int64 { return a.v.Load() }
