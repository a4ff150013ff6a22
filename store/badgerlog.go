package store

import (
	"fmt"
	"strings"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// badgerLogger routes Badger's log lines to zap (Badger's own default logger
// writes to stderr, beside Caddy's structured logs). Badger reports every
// open, flush and compaction at info level, which is routine for an operator,
// so Infof and Debugf go to debug; warnings and errors keep their level.
type badgerLogger struct {
	logger *zap.Logger
}

func (l badgerLogger) Errorf(format string, args ...any) {
	l.log(zapcore.ErrorLevel, format, args)
}

func (l badgerLogger) Warningf(format string, args ...any) {
	l.log(zapcore.WarnLevel, format, args)
}

func (l badgerLogger) Infof(format string, args ...any) {
	l.log(zapcore.DebugLevel, format, args)
}

func (l badgerLogger) Debugf(format string, args ...any) {
	l.log(zapcore.DebugLevel, format, args)
}

// log formats the line only when its level is enabled; Badger's lines often
// end in a newline, which zap would print as part of the message.
func (l badgerLogger) log(level zapcore.Level, format string, args []any) {
	if !l.logger.Core().Enabled(level) {
		return
	}
	l.logger.Log(level, strings.TrimRight(fmt.Sprintf(format, args...), "\n"))
}
