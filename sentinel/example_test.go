package sentinel_test

import (
	"context"
	"fmt"
	"log"

	"github.com/echomq/echomq-go/pubsub"
	"github.com/echomq/echomq-go/sentinel"
)

// Connect to the primary of "mymaster", with the data nodes' password in
// the URL and the sentinels' as an option; a Subscription follows the
// same primary.
func Example() {
	ctx := context.Background()
	cl, err := sentinel.Connect(ctx, "redis+sentinel://:data-pw@10.0.0.1:26379,10.0.0.2:26379,10.0.0.3/mymaster/0?sentinel_password=sent-pw")
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.Do(ctx, "SET", "greeting", "hello"); err != nil {
		log.Fatal(err)
	}
	sub, err := pubsub.Subscribe(ctx, cl.MasterSet().Options(), "news")
	if err != nil {
		log.Fatal(err)
	}
	defer sub.Close()
	fmt.Println("primary:", cl.MasterSet().Primary())
}

// ParseURL reads the sentinels, the master set's name and both sets of
// credentials.
func ExampleParseURL() {
	o, err := sentinel.ParseURL("valkey+sentinel://alice:pw@s1,s2:26380/mymaster/2?sentinel_username=watch&sentinel_password=spw")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(o.MasterName, o.Sentinels, o.DB, o.Username, o.SentinelUsername)
	// Output: mymaster [s1:26379 s2:26380] 2 alice watch
}
