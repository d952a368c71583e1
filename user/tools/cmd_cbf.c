/* SPDX-License-Identifier: BSD-2-Clause */
/* sfprof cbf: decode Compact Backtrace Format bytes to one line per result, and back. */

/*
 * Both directions read stdin and write stdout. Malformed input gets one line
 * on stderr and exit status 1 (decode still prints what came before it, and
 * the `truncated` the decoder turns it into); usage errors exit with 2.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sfunwind/cbf.h"

#include "cmds.h"
#include "common/vec.h"

static void usage(FILE *f)
{
	fputs("usage: sfprof cbf decode [--hex]\n"
	      "       sfprof cbf encode [--hex] [--word 16|32|64]\n"
	      "\n"
	      "decode reads one Compact Backtrace Format stack from stdin and prints one\n"
	      "line per result:\n"
	      "  pc 0xADDR        the interrupted instruction\n"
	      "  ra 0xADDR        a return address\n"
	      "  async 0xADDR     an async resume point\n"
	      "  omit N           N frames left out\n"
	      "  truncated        the stack ends early (or the input was malformed)\n"
	      "  end              the stack is complete\n"
	      "A `rep` is printed as the repeated lines.\n"
	      "\n"
	      "encode reads such lines and writes the bytes, as sfprof and Swift encode:\n"
	      "consecutive equal lines become a `rep`; without a final `end` or\n"
	      "`truncated`, `end` is added. Blank lines and lines starting with # are\n"
	      "skipped.\n"
	      "\n"
	      "  --hex            read (decode) or write (encode) the bytes as hex text\n"
	      "                   (decode: whitespace between digits is ignored)\n"
	      "  --word BITS      encode: the word size, 16, 32 or 64 (default 64)\n"
	      "  -h, --help       print this help\n", f);
}

static int fail(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(const char *verb, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "sfprof cbf %s: ", verb);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

/* All of @f into a malloc()ed buffer, NUL-terminated; NULL with errno set on failure. */
static char *read_all(FILE *f, size_t *len)
{
	size_t cap = 0, n = 0;
	char *buf = NULL;

	for (;;) {
		/* room for a byte more and the NUL: a full buffer doubles */
		if (VEC_RESERVE(buf, cap, n + 2, 4096)) {
			free(buf);
			errno = ENOMEM;
			return NULL;
		}
		n += fread(buf + n, 1, cap - n - 1, f);
		if (ferror(f)) {
			free(buf);
			errno = EIO;
			return NULL;
		}
		if (feof(f))
			break;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

static int hex_digit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Hex text to bytes, in place. Returns 0, or 1 after reporting why not. */
static int unhex(char *text, size_t len, size_t *out_len)
{
	size_t n = 0, digits = 0;
	int hi = 0;

	for (size_t i = 0; i < len; i++) {
		int d = hex_digit((unsigned char)text[i]);

		if (isspace((unsigned char)text[i]))
			continue;
		if (d < 0) {
			if (isprint((unsigned char)text[i]))
				return fail("decode", "--hex: '%c' at offset %zu is not a hex digit",
					    text[i], i);
			return fail("decode", "--hex: byte 0x%02x at offset %zu is not a hex digit",
				    (unsigned char)text[i], i);
		}
		if (digits++ % 2 == 0)
			hi = d;
		else
			text[n++] = (char)(hi << 4 | d);
	}
	if (digits % 2)
		return fail("decode", "--hex: odd number of hex digits (%zu)", digits);
	*out_len = n;
	return 0;
}

static void print_result(const struct sfu_cbf_frame *f)
{
	const char *name = sfu_cbf_kind_name(f->kind);

	switch (f->kind) {
	case SFU_CBF_PC:
	case SFU_CBF_RA:
	case SFU_CBF_ASYNC:
		printf("%s 0x%" PRIx64 "\n", name, f->value);
		break;
	case SFU_CBF_OMIT:
		printf("%s %" PRIu64 "\n", name, f->value);
		break;
	default:
		printf("%s\n", name);
		break;
	}
}

static int decode(bool hex)
{
	struct sfu_diag diag = { 0 };
	struct sfu_cbf_dec dec;
	struct sfu_cbf_frame f = { 0 };
	size_t len, used;
	char *data;
	int status = 0;

	data = read_all(stdin, &len);
	if (!data)
		return fail("decode", "cannot read stdin: %s", strerror(errno));
	if (hex && unhex(data, len, &len)) {
		free(data);
		return 1;
	}
	sfu_cbf_dec__init(&dec, data, len, 0, &diag);
	while (sfu_cbf_dec__next(&dec, &f) == 0)
		print_result(&f);
	used = sfu_cbf_dec__offset(&dec);
	if (sfu_cbf_dec__error(&dec, NULL))
		status = fail("decode", "malformed input: %s", diag.reason);
	else if (used < len)
		status = fail("decode", "%zu byte%s after the %s instruction at byte %zu",
			      len - used, len - used == 1 ? "" : "s",
			      f.kind == SFU_CBF_END ? "end" : "trunc", used - 1);
	free(data);
	if (fflush(stdout) || ferror(stdout))
		status = fail("decode", "cannot write to stdout: %s", strerror(errno));
	return status;
}

/* Skip blanks; @return the start of the next word and end it with a NUL, or NULL. */
static char *next_word(char **p)
{
	char *s = *p, *w;

	while (*s && isspace((unsigned char)*s))
		s++;
	if (!*s)
		return NULL;
	w = s;
	while (*s && !isspace((unsigned char)*s))
		s++;
	if (*s)
		*s++ = '\0';
	*p = s;
	return w;
}

/* One input line into @f. Returns 0, or 1 after reporting why not. */
static int parse_line(char *line, size_t lineno, uint64_t mask, unsigned word,
		      struct sfu_cbf_frame *f)
{
	static const uint8_t kinds[] = { SFU_CBF_PC, SFU_CBF_RA, SFU_CBF_ASYNC, SFU_CBF_OMIT,
					 SFU_CBF_END, SFU_CBF_TRUNCATED };
	char *p = line, *name = next_word(&p), *arg = next_word(&p), *end;
	bool address;

	f->kind = 0;
	for (size_t i = 0; i < sizeof(kinds); i++)
		if (!strcmp(name, sfu_cbf_kind_name(kinds[i])))
			f->kind = kinds[i];
	if (!f->kind)
		return fail("encode", "line %zu: unknown result '%s' (want pc, ra, async, omit, truncated or end)",
			    lineno, name);
	if (f->kind == SFU_CBF_END || f->kind == SFU_CBF_TRUNCATED) {
		if (arg)
			return fail("encode", "line %zu: '%s' takes no value", lineno, name);
		f->value = 0;
		return 0;
	}
	address = f->kind != SFU_CBF_OMIT;
	if (!arg)
		return fail("encode", "line %zu: '%s' needs %s", lineno, name,
			    address ? "an address like 0x7f" : "a frame count");
	if (next_word(&p))
		return fail("encode", "line %zu: '%s' takes one value", lineno, name);
	errno = 0;
	if (address) {
		if (strncmp(arg, "0x", 2) || !isxdigit((unsigned char)arg[2]))
			return fail("encode", "line %zu: address '%s' is not hex like 0x7f", lineno,
				    arg);
		f->value = strtoull(arg + 2, &end, 16);
	} else {
		if (!isdigit((unsigned char)arg[0]))
			return fail("encode", "line %zu: count '%s' is not a decimal number",
				    lineno, arg);
		f->value = strtoull(arg, &end, 10);
	}
	if (*end)
		return fail("encode", "line %zu: '%s' is not a number", lineno, arg);
	if (errno == ERANGE || f->value > mask)
		return fail("encode", "line %zu: %s does not fit %u-bit words", lineno, arg, word);
	return 0;
}

static int encode(bool hex, unsigned word)
{
	uint64_t mask = word == 64 ? UINT64_MAX : (UINT64_C(1) << word) - 1;
	struct sfu_cbf_frame *frames = NULL;
	size_t len, n = 0, cap = 0, lineno = 0;
	char *text, *line, *next;
	uint8_t *out = NULL;
	struct sfu_cbf_enc enc;
	int status = 1, err;
	bool ended = false;

	text = read_all(stdin, &len);
	if (!text)
		return fail("encode", "cannot read stdin: %s", strerror(errno));
	if (strlen(text) != len) {
		fail("encode", "stdin holds a NUL byte: not text (did you mean decode?)");
		goto out;
	}
	for (line = text; line && *line; line = next) {
		char *p = line;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		while (isspace((unsigned char)*p))
			p++;
		if (!*p || *p == '#')
			continue;
		if (ended) {
			fail("encode", "line %zu: '%s' after the end of the stack", lineno, p);
			goto out;
		}
		if (VEC_RESERVE(frames, cap, n + 1, 256)) {
			fail("encode", "%s", strerror(ENOMEM));
			goto out;
		}
		if (parse_line(p, lineno, mask, word, &frames[n]))
			goto out;
		ended = frames[n].kind == SFU_CBF_END || frames[n].kind == SFU_CBF_TRUNCATED;
		n++;
	}

	out = malloc(SFU_CBF_BOUND(n));
	if (!out) {
		fail("encode", "%s", strerror(ENOMEM));
		goto out;
	}
	err = sfu_cbf_enc__init(&enc, word, out, SFU_CBF_BOUND(n));
	if (!err)
		err = sfu_cbf_encode_frames(&enc, frames, n);
	if (err) {
		/* the lines were checked above, so this is a bug */
		fail("encode", "cannot encode: %s", strerror(-err));
		goto out;
	}
	if (hex) {
		for (size_t i = 0; i < sfu_cbf_enc__len(&enc); i++)
			printf("%s%02x", i ? " " : "", out[i]);
		putchar('\n');
	} else {
		fwrite(out, 1, sfu_cbf_enc__len(&enc), stdout);
	}
	status = 0;
	if (fflush(stdout) || ferror(stdout))
		status = fail("encode", "cannot write to stdout: %s", strerror(errno));
out:
	free(out);
	free(frames);
	free(text);
	return status;
}

int cmd_cbf(int argc, char **argv)
{
	enum { OPT_HEX = 256, OPT_WORD };
	static const struct option longopts[] = {
		{ "hex", no_argument, NULL, OPT_HEX },
		{ "word", required_argument, NULL, OPT_WORD },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	unsigned word = 64;
	bool hex = false, word_given = false;
	const char *verb;
	int c;

	if (argc < 2) {
		fprintf(stderr, "sfprof cbf: no command given (decode or encode)\n\n");
		usage(stderr);
		return 2;
	}
	verb = argv[1];
	if (!strcmp(verb, "--help") || !strcmp(verb, "-h")) {
		usage(stdout);
		return 0;
	}
	if (strcmp(verb, "decode") && strcmp(verb, "encode")) {
		fprintf(stderr, "sfprof cbf: unknown command '%s' (decode or encode)\n", verb);
		return 2;
	}
	argc--;
	argv++;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_HEX:
			hex = true;
			break;
		case OPT_WORD:
			if (!strcmp(optarg, "16") || !strcmp(optarg, "32") || !strcmp(optarg, "64")) {
				word = (unsigned)atoi(optarg);
				word_given = true;
				break;
			}
			fprintf(stderr, "sfprof cbf %s: --word takes 16, 32 or 64, not '%s'\n",
				verb, optarg);
			return 2;
		case 'h':
			usage(stdout);
			return 0;
		default:
			fprintf(stderr, "sfprof cbf %s: unknown option '%s' (see sfprof cbf --help)\n",
				verb, argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "sfprof cbf %s: unexpected argument '%s' (input comes from stdin)\n",
			verb, argv[optind]);
		return 2;
	}
	if (!strcmp(verb, "decode")) {
		if (word_given) {
			fprintf(stderr, "sfprof cbf decode: --word is for encode; the bytes say their word size\n");
			return 2;
		}
		return decode(hex);
	}
	return encode(hex, word);
}
