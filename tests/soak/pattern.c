/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Seeded byte patterns. Word w of stream `key` is mix(key + w * golden), so
 * a receiver checks any range of any message from (seed, side, QP, id) and
 * the offset alone, and two messages never share a pattern.
 */
#include <stdio.h>
#include <string.h>

#include "soak.h"

#define GOLDEN 0x9e3779b97f4a7c15ull

uint64_t soak_mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

uint64_t soak_key(uint64_t seed, unsigned int side, unsigned int qp,
		  uint64_t id)
{
	return soak_mix(soak_mix(seed * GOLDEN + side) ^
			((uint64_t)qp << 40) ^ id);
}

static inline uint64_t word_at(uint64_t key, uint64_t w)
{
	return soak_mix(key + w * GOLDEN);
}

static inline uint8_t byte_at(uint64_t key, uint64_t pos)
{
	return (uint8_t)(word_at(key, pos >> 3) >> ((pos & 7) * 8));
}

void soak_fill(void *buf, size_t len, uint64_t key, uint64_t pos)
{
	uint8_t *p = buf;
	size_t i = 0;

	for (; i < len && ((pos + i) & 7); i++)
		p[i] = byte_at(key, pos + i);
	for (; i + 8 <= len; i += 8) {
		uint64_t w = word_at(key, (pos + i) >> 3);

		memcpy(p + i, &w, 8);	/* little endian: byte k is bits 8k.. */
	}
	for (; i < len; i++)
		p[i] = byte_at(key, pos + i);
}

size_t soak_check(const void *buf, size_t len, uint64_t key, uint64_t pos)
{
	const uint8_t *p = buf;
	size_t i = 0, bad = 0;

	for (; i < len && ((pos + i) & 7); i++)
		bad += p[i] != byte_at(key, pos + i);
	for (; i + 8 <= len; i += 8) {
		uint64_t w = word_at(key, (pos + i) >> 3), got;

		memcpy(&got, p + i, 8);
		if (got == w)
			continue;
		for (unsigned int k = 0; k < 8; k++)
			bad += (uint8_t)(got >> (8 * k)) != (uint8_t)(w >> (8 * k));
	}
	for (; i < len; i++)
		bad += p[i] != byte_at(key, pos + i);
	return bad;
}

size_t soak_check_canary(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	size_t bad = 0;

	for (size_t i = 0; i < len; i++)
		bad += p[i] != SOAK_CANARY;
	return bad;
}

size_t soak_check_or_canary(const void *buf, size_t len, uint64_t key,
			    uint64_t pos)
{
	const uint8_t *p = buf;
	size_t bad = 0;

	for (size_t i = 0; i < len; i++)
		bad += p[i] != SOAK_CANARY && p[i] != byte_at(key, pos + i);
	return bad;
}

size_t soak_sgl_span(const struct soak_sgl *s)
{
	size_t span = 0;

	for (uint32_t i = 0; i < s->n; i++)
		span += s->len[i] + SOAK_GAP;
	return span;
}

/* SGE pieces: SOAK_GAP canary bytes after each (see struct soak_sgl). */

size_t soak_piece_off(const struct soak_sgl *g, uint32_t i)
{
	size_t off = 0;

	for (uint32_t j = 0; j < i; j++)
		off += g->len[j] + SOAK_GAP;
	return off;
}

void soak_fill_sgl(uint8_t *base, const struct soak_sgl *g, uint64_t key)
{
	uint64_t pos = 0;

	for (uint32_t i = 0; i < g->n; i++) {
		soak_fill(base + soak_piece_off(g, i), g->len[i], key, pos);
		pos += g->len[i];
	}
}

/* Pattern bytes wrong in the pieces plus canary bytes wrong in the gaps. */
size_t soak_check_sgl(const uint8_t *base, const struct soak_sgl *g,
			uint64_t key, uint64_t pos)
{
	size_t bad = 0;

	for (uint32_t i = 0; i < g->n; i++) {
		const uint8_t *p = base + soak_piece_off(g, i);

		bad += soak_check(p, g->len[i], key, pos);
		bad += soak_check_canary(p + g->len[i], SOAK_GAP);
		pos += g->len[i];
	}
	return bad;
}

/* Message byte pos through the pieces, or -1 past their end. */
static int msg_byte(const uint8_t *base, const struct soak_sgl *g,
		    uint64_t pos)
{
	for (uint32_t i = 0; i < g->n; i++) {
		if (pos < g->len[i])
			return base[soak_piece_off(g, i) + pos];
		pos -= g->len[i];
	}
	return -1;
}

void soak_explain_sgl(char *buf, size_t n, const uint8_t *base,
		      const struct soak_sgl *g, uint64_t key)
{
	uint64_t len = 0, pos, at, got = 0, w;
	int b = 0;

	for (uint32_t i = 0; i < g->n; i++)
		len += g->len[i];
	for (pos = 0; pos < len; pos++)
		if ((b = msg_byte(base, g, pos)) != byte_at(key, pos))
			break;
	if (pos == len) {
		snprintf(buf, n,
			 "the message bytes are right (a canary is not)");
		return;
	}
	at = (pos + 7) & ~7ull;	/* a whole pattern word from here */
	for (unsigned int k = 0; k < 8; k++) {
		b = msg_byte(base, g, at + k);
		if (b < 0)
			break;
		got |= (uint64_t)b << (8 * k);
	}
	for (w = 0; b >= 0 && w < len / 8; w++)
		if (word_at(key, w) == got)
			break;
	if (b >= 0 && w < len / 8)
		snprintf(buf, n,
			 "first wrong byte at %llu; at %llu lie the message's bytes of %llu (shift %+lld)",
			 (unsigned long long)pos, (unsigned long long)at,
			 (unsigned long long)(w * 8),
			 (long long)(w * 8) - (long long)at);
	else
		snprintf(buf, n,
			 "first wrong byte at %llu; at %llu lies no word of this message",
			 (unsigned long long)pos, (unsigned long long)at);
}

/* Writes message bytes [pos, pos+n) across the pieces (the id header). */
void soak_put_msg_bytes(uint8_t *base, const struct soak_sgl *g,
			  uint64_t pos, const uint8_t *src, size_t n)
{
	uint64_t at = 0;

	for (uint32_t i = 0; i < g->n && n; i++) {
		uint8_t *p = base + soak_piece_off(g, i);

		for (uint32_t b = 0; b < g->len[i] && n; b++, at++)
			if (at >= pos) {
				p[b] = *src++;
				n--;
			}
	}
}
