/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* A minimal intrusive doubly linked list with a sentinel head. */
#ifndef RN_LIST_H
#define RN_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct rn_list {
	struct rn_list *next;
	struct rn_list *prev;
};

#define RN_LIST_INIT(name) { &(name), &(name) }

#define rn_container_of(ptr, type, member)                                     \
	((type *)((char *)(ptr) - offsetof(type, member)))

static inline void rn_list_init(struct rn_list *head)
{
	head->next = head;
	head->prev = head;
}

static inline bool rn_list_empty(const struct rn_list *head)
{
	return head->next == head;
}

static inline void rn_list_add_tail(struct rn_list *head, struct rn_list *node)
{
	node->prev = head->prev;
	node->next = head;
	head->prev->next = node;
	head->prev = node;
}

static inline void rn_list_del(struct rn_list *node)
{
	node->prev->next = node->next;
	node->next->prev = node->prev;
	node->next = node;
	node->prev = node;
}

/* Iterate where the body may delete the current node. */
#define rn_list_for_each_safe(pos, tmp, head)                                  \
	for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head);       \
	     (pos) = (tmp), (tmp) = (pos)->next)

#endif
