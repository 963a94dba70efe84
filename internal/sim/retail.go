package sim

import (
	"strconv"
	"strings"
	"time"

	"github.com/tributary/tributary/pipeline"
)

func (g *generator) user() Op {
	i := g.users.pick(g.r)
	pk := "USER#u" + strconv.Itoa(i)
	cur := g.t.Get(pk, "PROFILE")
	if cur == nil {
		return g.put(pipeline.Item{
			attrPK: str(pk), attrSK: str("PROFILE"), attrType: str("User"),
			"userId": str("u" + strconv.Itoa(i)),
			"email":  str("u" + strconv.Itoa(i) + "@example.com"),
			"tier":   str("basic"),
		}, "user-create")
	}
	if g.r.Float64() < 0.9 {
		item := content(cur)
		item["tier"] = str(g.pickString([]string{"basic", "plus", "pro"}))
		item["lastSeen"] = str(g.stamp())
		return g.put(item, "user-update")
	}
	return g.del(cur, "user-delete")
}

func (g *generator) cart() Op {
	i := g.users.pick(g.r)
	pk := "CART#c" + strconv.Itoa(i)
	cur := g.t.Get(pk, "META")
	if cur == nil {
		return g.put(pipeline.Item{
			attrPK: str(pk), attrSK: str("META"), attrType: str("Cart"),
			"userId":    str("u" + strconv.Itoa(i)),
			"updatedAt": str(g.stamp()),
		}, "cart-create")
	}
	if g.r.Float64() < 0.85 {
		item := content(cur)
		item["updatedAt"] = str(g.stamp())
		return g.put(item, "cart-touch")
	}
	return g.del(cur, "cart-delete")
}

func (g *generator) cartItem() Op {
	i, j := g.users.pick(g.r), g.products.pick(g.r)
	pk, sk := "CART#c"+strconv.Itoa(i), "ITEM#p"+strconv.Itoa(j)
	cur := g.t.Get(pk, sk)
	if cur == nil {
		return g.put(pipeline.Item{
			attrPK: str(pk), attrSK: str(sk), attrType: str("CartItem"),
			"productId": str("p" + strconv.Itoa(j)),
			"quantity":  num(int64(1 + g.r.IntN(3))),
			"unitPrice": numS(cents(int64(199 + 100*j))),
			"addedAt":   str(g.stamp()),
		}, "cart-add")
	}
	if g.r.Float64() < 0.75 {
		q := intAttr(cur, "quantity")
		nq := int64(g.r.IntN(9)) // 0 included: a line kept at zero
		if nq >= q {
			nq++
		}
		item := content(cur)
		item["quantity"] = num(nq)
		return g.put(item, "cart-quantity")
	}
	return g.del(cur, "cart-remove")
}

// orderDay returns an order date: the start day four times in five.
func (g *generator) orderDay() string {
	day := g.w.Start
	if g.r.Float64() >= 0.8 {
		day = day.AddDate(0, 0, -1-g.r.IntN(6))
	}
	return day.Format(time.DateOnly)
}

func (g *generator) newOrder(pk, sk, id, day string, user int) pipeline.Item {
	return pipeline.Item{
		attrPK: str(pk), attrSK: str(sk), attrType: str("Order"),
		"orderId":   str(id),
		"userId":    str("u" + strconv.Itoa(user)),
		"orderDate": str(day),
		"status":    str("PENDING"),
		"total":     numS(cents(int64(500 + g.r.IntN(50000)))),
		"currency":  str("EUR"),
		"itemCount": num(int64(1 + g.r.IntN(5))),
	}
}

func (g *generator) order() Op {
	i := g.users.pick(g.r)
	pk := "USER#u" + strconv.Itoa(i)
	if len(g.orders[i]) == 0 || g.r.Float64() < 0.35 {
		id, day := g.id("o"), g.orderDay()
		sk := "ORDER#" + day + "#" + id
		g.orders[i] = append(g.orders[i], sk)
		return g.put(g.newOrder(pk, sk, id, day, i), "order-create")
	}
	sk := g.orders[i][g.r.IntN(len(g.orders[i]))]
	cur := g.t.Get(pk, sk)
	if cur == nil {
		parts := strings.Split(sk, "#") // ORDER, day, id
		return g.put(g.newOrder(pk, sk, parts[2], parts[1], i), "order-recreate")
	}
	item := content(cur)
	u := g.r.Float64()
	if entityType(cur) == "ArchivedOrder" {
		if u < 0.4 {
			item[attrType] = str("Order")
			return g.put(item, "order-restore")
		}
		return g.del(cur, "order-purge")
	}
	switch status := strAttr(cur, "status"); {
	case status == "PENDING" && u < 0.7:
		item["status"] = str("PAID")
		item["paidAt"] = str(g.stamp())
		item["paymentRef"] = str("pay_" + strconv.Itoa(g.r.IntN(1e6)))
		return g.put(item, "order-pay")
	case status == "PENDING" && u < 0.85, status == "PAID" && u >= 0.8:
		item["status"] = str("CANCELLED")
		return g.put(item, "order-cancel")
	case status == "PENDING":
		item["total"] = numS(cents(int64(500 + g.r.IntN(50000))))
		return g.put(item, "order-total")
	case status == "PAID":
		item["status"] = str("SHIPPED")
		return g.put(item, "order-ship")
	case u < 0.5:
		item[attrType] = str("ArchivedOrder")
		return g.put(item, "order-archive")
	case u < 0.7:
		return g.del(cur, "order-delete")
	}
	item["note"] = str("note " + strconv.Itoa(g.r.IntN(100)))
	return g.put(item, "order-note")
}
