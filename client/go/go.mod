module seqd.dev/go

go 1.19
