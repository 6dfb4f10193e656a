package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/imcore/im/server"
	"github.com/imcore/im/server/auth"
	"github.com/imcore/im/server/blob"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/server/store/sqlitestore"
)

// toolStore is what the commands beside a running server (token, account,
// archive) use of its storage; the embedded and the DynamoDB store both
// are one.
type toolStore interface {
	auth.Epochs
	RevokeTokens(ctx context.Context, user string) (int64, error)
	SetAccount(ctx context.Context, user, category, subBiz string) error
	store.Archiver
}

// toolFlags are the flags that reach a server's storage from a command:
// the data directory (embedded), or the store flags and -redis (scaled
// out), and -token-secret-file.
type toolFlags struct {
	dataDir, redisURL, secretFile *string
	storage                       *storeFlags
}

func addToolFlags(fs *flag.FlagSet) *toolFlags {
	return &toolFlags{
		dataDir:    fs.String("data", defaultDataDir(), "data directory of the server (the embedded store, its token secret)"),
		storage:    addStoreFlags(fs),
		redisURL:   fs.String("redis", "", "Redis URL of the scaled-out deployment (-store dynamodb)"),
		secretFile: fs.String("token-secret-file", "", "file holding the token signing secret the nodes share (scaled out: required to mint tokens)"),
	}
}

// open opens the storage; blobs is the cold storage the embedded store
// reads archived bodies from (nil: none).
func (f *toolFlags) open(ctx context.Context, blobs blob.Store) (toolStore, func() error, error) {
	if err := f.storage.check(); err != nil {
		return nil, nil, err
	}
	if f.storage.scaledOut() {
		st, closeAll, err := f.storage.scaleOut(*f.redisURL, "").OpenStore(ctx)
		if err != nil {
			return nil, nil, err
		}
		return st, closeAll, nil
	}
	if err := os.MkdirAll(*f.dataDir, 0o700); err != nil {
		return nil, nil, err
	}
	db, err := sqlitestore.Open(filepath.Join(*f.dataDir, server.DatabaseFile), sqlitestore.Options{Blobs: blobs})
	if err != nil {
		return nil, nil, err
	}
	return db, db.Close, nil
}

// secret returns the token signing secret: the shared file when given
// (and always when scaled out), else the data directory's.
func (f *toolFlags) secret() ([]byte, error) {
	switch {
	case *f.secretFile != "":
		return auth.LoadSecretFile(*f.secretFile)
	case f.storage.scaledOut():
		return nil, errors.New("-token-secret-file is needed with -store dynamodb: every node verifies tokens with the secret it holds")
	default:
		return auth.LoadOrCreateSecret(*f.dataDir)
	}
}

// checkEmbedded refuses a data directory without a database.
func (f *toolFlags) checkEmbedded() error {
	if f.storage.scaledOut() {
		return nil
	}
	path := filepath.Join(*f.dataDir, server.DatabaseFile)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no database at %s: is -data the server's data directory?", path)
	}
	return nil
}
