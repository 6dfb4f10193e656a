package client

import "github.com/imcore/im/protocol"

// HistoryStart reports that the server holds no message of Conv below Seq
// that the user may read: the user's history of the conversation starts
// at Seq (1 for the whole conversation, a later seq for a member who
// joined a group later). It answers a LoadOlder that reached that start,
// after the page's messages, if any, are stored.
type HistoryStart struct {
	Conv string
	Seq  int64
}

func (HistoryStart) event() {}

// historyStart is the start a history page below beforeSeq shows, 0 when
// it shows none: a page with nothing more below it starts at its first
// message, an empty one at beforeSeq.
func historyStart(beforeSeq int64, page *protocol.Messages) int64 {
	switch {
	case page.HasMore:
		return 0
	case len(page.Messages) > 0:
		return page.Messages[0].Seq
	}
	return max(beforeSeq, 0)
}
