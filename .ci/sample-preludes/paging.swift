// Stand-in for the README's paging sample: a page of items, empty past the last page.
import JobKit

func fetch(page: Int) -> Job<[String]> { .just(page < 3 ? ["item"] : []) }
