package dynamostore

import (
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// item is one DynamoDB item.
type item map[string]types.AttributeValue

// strV, numV and boolV build attribute values.
func strV(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func numV(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}
func boolV(v bool) types.AttributeValue { return &types.AttributeValueMemberBOOL{Value: v} }

// str returns a string attribute, "" when absent.
func (it item) str(name string) string {
	if v, ok := it[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// num returns a number attribute, 0 when absent.
func (it item) num(name string) int64 {
	if v, ok := it[name].(*types.AttributeValueMemberN); ok {
		n, _ := strconv.ParseInt(v.Value, 10, 64)
		return n
	}
	return 0
}

// boolean returns a boolean attribute, false when absent.
func (it item) boolean(name string) bool {
	if v, ok := it[name].(*types.AttributeValueMemberBOOL); ok {
		return v.Value
	}
	return false
}

// has reports whether an attribute is present.
func (it item) has(name string) bool {
	_, ok := it[name]
	return ok
}

// setStr sets a string attribute, leaving it out when empty (an empty
// string is not stored: absent reads back as "").
func (it item) setStr(name, v string) {
	if v != "" {
		it[name] = strV(v)
	}
}

// numMap returns a map of numbers (a group's members), empty when absent.
func (it item) numMap(name string) map[string]int64 {
	out := map[string]int64{}
	m, ok := it[name].(*types.AttributeValueMemberM)
	if !ok {
		return out
	}
	for k, v := range m.Value {
		if n, ok := v.(*types.AttributeValueMemberN); ok {
			out[k], _ = strconv.ParseInt(n.Value, 10, 64)
		}
	}
	return out
}

// numMapV builds a map of numbers.
func numMapV(m map[string]int64) types.AttributeValue {
	out := make(map[string]types.AttributeValue, len(m))
	for k, v := range m {
		out[k] = numV(v)
	}
	return &types.AttributeValueMemberM{Value: out}
}
