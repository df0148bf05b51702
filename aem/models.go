package aem

// The five models of the Modulo paper.
var (
	QCZ  Model = NewQuorum("Q/C/Z")
	QCM  Model = NewQuorum("Q/C/M")
	SSR  Model = NewRedis(Suspend)
	SLR  Model = NewRedis(Link)
	SCLR Model = NewRedis(CrashLink)
)
