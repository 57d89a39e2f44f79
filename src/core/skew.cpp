/*-------------------------------------------------------------------------
 *
 * skew.cpp
 *		The registry's clock-skew estimate (see skew.hpp).
 *
 *-------------------------------------------------------------------------
 */
#include "core/skew.hpp"

namespace snowflake
{

namespace
{

int64_t
bounded(int64_t v) noexcept
{
	return v < -kSkewLimitMs ? -kSkewLimitMs : v > kSkewLimitMs ? kSkewLimitMs : v;
}

}								/* namespace */

void
skew_forget(SkewEstimate &e) noexcept
{
	e.count = 0;
}

void
skew_add(SkewEstimate &e, int64_t now_ns, int64_t lo_ms, int64_t hi_ms) noexcept
{
	int64_t		est_lo = INT64_MIN, est_hi = INT64_MAX;

	e.ring[e.next] = SkewSample{now_ns, bounded(lo_ms), bounded(hi_ms)};
	e.next = (e.next + 1) % kSkewSamples;
	e.count = e.count + 1 < kSkewSamples ? e.count + 1 : kSkewSamples;
	for (int i = 1; i <= e.count; i++)
	{
		const SkewSample &s = e.ring[(e.next - i + kSkewSamples) % kSkewSamples];
		int64_t		l = est_lo > s.lo_ms ? est_lo : s.lo_ms;
		int64_t		h = est_hi < s.hi_ms ? est_hi : s.hi_ms;

		/* the newest always counts; an older one while it agrees and is recent */
		if (i > 1 && (l > h || now_ns - s.at_ns > kSkewWindowNs))
		{
			e.count = i - 1;	/* older samples no longer count */
			break;
		}
		est_lo = l;
		est_hi = h;
	}
	e.known = true;
	e.lo_ms = est_lo;
	e.hi_ms = est_hi;
}

int64_t
skew_mid_ms(const SkewEstimate &e) noexcept
{
	return e.lo_ms + (e.hi_ms - e.lo_ms) / 2;
}

int64_t
skew_error_ms(const SkewEstimate &e) noexcept
{
	return (e.hi_ms - e.lo_ms + 1) / 2;
}

bool
skew_beyond(const SkewEstimate &e, int64_t max_ms) noexcept
{
	return max_ms > 0 && e.known && (e.lo_ms > max_ms || e.hi_ms < -max_ms);
}

}								/* namespace snowflake */
