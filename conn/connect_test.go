package conn_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
)

func TestConnect(t *testing.T) {
	servertest.Need(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := conn.Connect(ctx, "redis://"+srv.Addr+"/3")
	require.NoError(t, err)
	defer c.Close()
	v, err := c.Do(ctx, "CLIENT", "INFO")
	require.NoError(t, err)
	require.Contains(t, v.Text(), " db=3 ", "the URL's database is selected")
	require.Equal(t, srv.Addr, c.Options().Addr)
	require.Equal(t, 3, c.Options().DB)

	_, err = conn.Connect(ctx, "redis://:hunter2@127.0.0.1:6379/notanumber")
	require.Error(t, err)
	require.NotContains(t, err.Error(), "hunter2")
	var ue interface{ Unwrap() error }
	_ = errors.As(err, &ue)
	require.True(t, strings.Contains(err.Error(), "notanumber") || strings.Contains(err.Error(), "database"), err.Error())
}
